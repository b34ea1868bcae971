//! The command sandbox: what confining a command costs.

use agent_tools::{AgentTools, CommandSandbox, Config, Launcher};
use anyhow::{Result, bail};
use serde_json::{Value, json};

use super::Ctx;
use crate::measure::{Step, interleaved};
use crate::report::Table;

/// `true` through the bash tool and the release launcher, sandboxed and
/// not, side by side: the difference is the sandbox alone (building and
/// applying the Landlock ruleset and the seccomp filter in the launcher).
pub fn sandbox(ctx: &Ctx<'_>) -> Result<Table> {
    eprintln!("sandbox ...");
    let mut table = Table::new("sandbox");
    let abi = match agent_tools::landlock_abi() {
        Ok(abi) => abi,
        Err(err) => {
            table.note(format!(
                "skipped: no command sandbox on this machine: {err}"
            ));
            return Ok(table);
        }
    };
    let dir = tempfile::tempdir()?;
    let launcher = Launcher::new(ctx.exe()?, ["__run-command".into()]);
    let open = |sandbox| -> Result<AgentTools> {
        let config = Config::builder(dir.path())
            .bash_launcher(launcher.clone())
            .sandbox(sandbox)
            .build()?;
        Ok(agent_tools_surface_default::open(config)?)
    };
    let confined = open(CommandSandbox::On {
        network: false,
        vcs_writes: false,
    })?;
    let free = open(CommandSandbox::Off)?;
    let run = |tools: &AgentTools| -> Result<()> {
        let result = tools.call("bash", json!({"command": "true"}));
        let value: Value = serde_json::from_str(&result.text)?;
        if result.is_error || value.get("exit_code").and_then(Value::as_i64) != Some(0) {
            bail!("`true` failed: {}", result.text);
        }
        Ok(())
    };
    // The sandbox must really be in force for the figure to mean anything.
    let escape = dir.path().with_extension("escape");
    let probe = confined.call(
        "bash",
        json!({"command": format!("touch {}", escape.display())}),
    );
    let refused = ["Permission denied", "Read-only file system"]
        .iter()
        .any(|phrase| probe.text.contains(phrase));
    if escape.exists() || !refused {
        bail!("the sandboxed bash wrote outside its root: {}", probe.text);
    }

    let runs = ctx.pick(300, 50);
    let stats = interleaved(
        runs,
        &mut [
            Box::new(|| run(&confined)) as Step<'_>,
            Box::new(|| run(&free)),
        ],
    )?;
    let (ours, bare) = (&stats[0], &stats[1]);
    table.timed(
        format!("`true`: bash tool with --sandbox (Landlock ABI {abi}) vs without, both through the launcher"),
        ours,
        bare,
    );
    table.row(
        "sandbox overhead per command (median difference; goal ≤ 2 ms)",
        format!(
            "+{:.0} µs",
            (ours.median().as_secs_f64() - bare.median().as_secs_f64()) * 1e6
        ),
        "—",
        "—",
    );
    table.note(format!(
        "{runs} runs of each, interleaved, after one untimed warm-up. Both go through the \
         release `agent-tools __run-command` launcher; the sandboxed one also builds and \
         applies the Landlock ruleset and the seccomp socket filter before it starts `sh`."
    ));
    Ok(table)
}
