use super::*;

fn settings(dir: &Path) -> Settings {
    Settings::new(dir.join("state"))
}

/// Records one change of `path` from `before` to `after` (each `None` for
/// absent), writing the file in between as the write path would.
fn record_write(journal: &Arc<Journal>, tool: &str, path: &Path, after: Option<&[u8]>) -> u64 {
    let scope = journal.begin(tool, "default", "local");
    let recorder = current().unwrap();
    let before = fs::read(path).ok();
    let image =
        |data: &[u8]| Image::stored(recorder.store(data).unwrap(), 0o644, data.len() as u64);
    let op = match (&before, after) {
        (None, _) => Op::Create,
        (Some(_), Some(_)) => Op::Modify,
        (Some(_), None) => Op::Delete,
    };
    let change = Change::new(path, op, before.as_deref().map(image), after.map(image));
    let token = recorder.intent(change).unwrap();
    match after {
        Some(data) => fs::write(path, data).unwrap(),
        None => fs::remove_file(path).unwrap(),
    }
    recorder.done(token);
    scope.finish().unwrap().unwrap()
}

/// Each change of `record`: its path and its state.
fn change_states(record: &CallRecord) -> Vec<(PathBuf, ChangeState)> {
    record
        .changes
        .iter()
        .map(|c| (c.change.path.clone(), c.state))
        .collect()
}

#[test]
fn a_call_is_recorded_with_its_contents() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    let file = dir.path().join("a.txt");
    fs::write(&file, "one\n").unwrap();
    let id = record_write(&journal, "edit_file", &file, Some(b"two\n"));
    let call = journal.call(id).unwrap().unwrap();
    assert_eq!(call.tool, "edit_file");
    assert_eq!(call.changes.len(), 1);
    let change = &call.changes[0];
    assert_eq!(change.state, ChangeState::Done);
    assert_eq!(change.change.op, Op::Modify);
    let before = change.change.before.as_ref().unwrap().hash.clone().unwrap();
    assert_eq!(journal.content(&before).unwrap(), b"one\n");
    assert!(journal.ids("pending").unwrap().is_empty());
}

#[test]
fn a_call_without_changes_leaves_no_record_and_ids_increase() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    drop(journal.begin("read_file", "default", "local"));
    assert!(journal.calls().unwrap().is_empty());
    let file = dir.path().join("a.txt");
    let a = record_write(&journal, "write_file", &file, Some(b"a"));
    let b = record_write(&journal, "write_file", &file, Some(b"b"));
    assert!(b > a);
    let ids: Vec<u64> = journal.calls().unwrap().iter().map(|c| c.id).collect();
    assert_eq!(ids, vec![b, a], "newest first");
    assert!(current().is_none(), "the scope is gone with the call");
}

#[test]
fn contents_are_stored_once_and_compacted_readably() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    let data = "fn main() {}\n".repeat(200);
    let a = journal.store(data.as_bytes()).unwrap();
    let b = journal.store(data.as_bytes()).unwrap();
    assert_eq!(a, b);
    assert_eq!(journal.list_objects().unwrap().len(), 1);
    assert_eq!(journal.compact().unwrap(), 1);
    let (_, path, size) = journal.list_objects().unwrap().remove(0);
    assert!(path.extension().is_some_and(|e| e == "zst"));
    assert!(size < data.len() as u64 / 4, "{size}");
    assert_eq!(journal.content(&a).unwrap(), data.as_bytes());
    assert!(matches!(
        journal.content(&hash(b"never stored")),
        Err(JournalError::MissingContent { .. })
    ));
}

/// A crash between the write-ahead record and the file change: the next
/// open finds the pending record and compares each change with the disk.
#[test]
fn an_interrupted_call_is_resolved_against_the_disk_at_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let made = dir.path().join("made.txt");
    let not_made = dir.path().join("not-made.txt");
    let other = dir.path().join("other.txt");
    for path in [&made, &not_made, &other] {
        fs::write(path, "old\n").unwrap();
    }
    {
        let journal = Journal::open(settings(dir.path())).unwrap();
        let scope = journal.begin("apply_patch", "default", "local");
        let recorder = current().unwrap();
        let old = Image::stored(recorder.store(b"old\n").unwrap(), 0o644, 4);
        let new = Image::stored(recorder.store(b"new\n").unwrap(), 0o644, 4);
        for path in [&made, &not_made, &other] {
            recorder
                .intent(Change::new(
                    path,
                    Op::Modify,
                    Some(old.clone()),
                    Some(new.clone()),
                ))
                .unwrap();
        }
        // The crash: one file written, one not, one changed by someone
        // else; the scope is never filed.
        fs::write(&made, "new\n").unwrap();
        fs::write(&other, "neither\n").unwrap();
        std::mem::forget(scope);
        let _ = CURRENT.with(|c| c.take());
        assert_eq!(journal.ids("pending").unwrap().len(), 1);
        assert!(journal.calls().unwrap().is_empty());
    }
    let journal = Journal::open(settings(dir.path())).unwrap();
    assert!(journal.ids("pending").unwrap().is_empty());
    let calls = journal.calls().unwrap();
    assert_eq!(calls.len(), 1);
    let states = change_states(&calls[0]);
    assert_eq!(
        states,
        vec![(made, ChangeState::Done), (other, ChangeState::Unknown)]
    );
}

#[test]
fn a_pending_record_of_a_live_process_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    let mut record = CallRecord {
        id: 7,
        time: now_secs(),
        tool: "write_file".into(),
        surface: "default".into(),
        principal: "local".into(),
        // pid 1 is always alive.
        pid: 1,
        undoes: Vec::new(),
        notes: Vec::new(),
        changes: vec![ChangeRecord {
            change: Change::new(dir.path().join("x"), Op::Create, None, None),
            state: ChangeState::Pending,
        }],
    };
    journal.write_pending(&record).unwrap();
    drop(journal);
    let journal = Journal::open(settings(dir.path())).unwrap();
    assert_eq!(journal.ids("pending").unwrap(), vec![7]);
    // Its id is not handed out again.
    assert_eq!(journal.next_id().unwrap(), 8);
    record.pid = u32::MAX;
    journal.write_pending(&record).unwrap();
    drop(journal);
    let journal = Journal::open(settings(dir.path())).unwrap();
    assert!(journal.ids("pending").unwrap().is_empty());
}

/// A process killed between writing a temporary record and renaming it
/// leaves `NAME.tmp.PID.N` behind; the next open removes a dead process's,
/// and leaves a live one's (pid 1 is always alive) and other names alone.
#[test]
fn a_dead_processes_temporary_records_are_swept_at_open() {
    let dir = tempfile::tempdir().unwrap();
    drop(Journal::open(settings(dir.path())).unwrap());
    let state = dir.path().join("state");
    let dead = format!("{}.tmp.{}.0", record_name(3), u32::MAX);
    let live = format!("{}.tmp.1.0", record_name(4));
    for (sub, name) in [("pending", &dead), ("calls", &dead), ("pending", &live)] {
        std::fs::write(state.join(sub).join(name), b"{").unwrap();
    }
    std::fs::write(state.join("pending").join("notes.txt"), b"x").unwrap();
    drop(Journal::open(settings(dir.path())).unwrap());
    let left = |sub: &str| {
        let mut names: Vec<String> = std::fs::read_dir(state.join(sub))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };
    assert_eq!(left("pending"), vec![live.clone(), "notes.txt".to_owned()]);
    assert!(left("calls").is_empty());
    assert_eq!(temporary_owner(&dead), Some(u32::MAX));
    assert_eq!(temporary_owner("00000003.json"), None);
    assert_eq!(temporary_owner("x.tmp.12.y"), None);
}

#[test]
fn a_withdrawn_change_is_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    let scope = journal.begin("write_file", "default", "local");
    let recorder = current().unwrap();
    let token = recorder
        .intent(Change::new(dir.path().join("x"), Op::Create, None, None))
        .unwrap();
    recorder.abort(token);
    assert_eq!(scope.finish().unwrap(), Some(1));
    assert!(journal.calls().unwrap().is_empty());
}

#[test]
fn the_journal_stays_within_its_count_and_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = settings(dir.path());
    settings.max_calls = 50;
    settings.durability = Durability::Relaxed;
    let journal = Journal::open(settings.clone()).unwrap();
    let file = dir.path().join("f.txt");
    for n in 0..400 {
        record_write(
            &journal,
            "write_file",
            &file,
            Some(format!("v{n}\n").as_bytes()),
        );
        assert!(journal.ids("calls").unwrap().len() <= 50);
    }
    let report = journal.prune().unwrap();
    assert!(
        report.calls_kept <= 50 && report.calls_kept >= 45,
        "{report:?}"
    );
    // Contents of dropped calls are gone: at most two per kept call.
    assert!(journal.list_objects().unwrap().len() <= 2 * report.calls_kept + 1);
    let newest = &journal.calls().unwrap()[0];
    let after = newest.changes[0]
        .change
        .after
        .as_ref()
        .unwrap()
        .hash
        .clone()
        .unwrap();
    assert_eq!(journal.content(&after).unwrap(), b"v399\n");

    // The byte bound drops the oldest calls until the rest fit.
    settings.max_bytes = 3000;
    drop(journal);
    let journal = Journal::open(settings).unwrap();
    let big = dir.path().join("big.txt");
    for n in 0..10u8 {
        record_write(&journal, "write_file", &big, Some(&vec![n; 1000]));
    }
    let report = journal.prune().unwrap();
    assert!(report.bytes_kept <= 3000, "{report:?}");
    assert!(report.calls_kept >= 1);
}

#[test]
fn old_calls_are_pruned_by_age() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = settings(dir.path());
    let journal = Journal::open(settings.clone()).unwrap();
    let file = dir.path().join("f.txt");
    let id = record_write(&journal, "write_file", &file, Some(b"x"));
    let path = dir.path().join("state/calls").join(record_name(id));
    let mut record = journal.call(id).unwrap().unwrap();
    record.time -= 3600;
    fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
    settings.max_age = Duration::from_secs(60);
    drop(journal);
    let journal = Journal::open(settings).unwrap();
    assert!(journal.calls().unwrap().is_empty());
    assert!(journal.list_objects().unwrap().is_empty());
}

#[test]
fn a_state_directory_inside_a_root_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    fs::create_dir(&root).unwrap();
    let inside = Settings::new(root.join(".state/journal"));
    assert!(matches!(
        inside.check_outside(std::slice::from_ref(&root)),
        Err(JournalError::InsideRoot { .. })
    ));
    assert!(
        Settings::new(&root)
            .check_outside(std::slice::from_ref(&root))
            .is_err()
    );
    // Through a symbolic link too.
    std::os::unix::fs::symlink(&root, dir.path().join("link")).unwrap();
    let linked = Settings::new(dir.path().join("link/state"));
    assert!(linked.check_outside(std::slice::from_ref(&root)).is_err());
    let outside = Settings::new(dir.path().join("state"));
    assert!(outside.check_outside(&[root]).is_ok());
}

#[test]
fn a_corrupt_record_is_reported_not_skipped_silently() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    fs::write(
        dir.path().join("state/calls").join(record_name(3)),
        "{not json",
    )
    .unwrap();
    assert!(matches!(journal.calls(), Err(JournalError::Corrupt { .. })));
}

#[test]
fn a_counter_behind_the_records_does_not_hand_out_a_used_id() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    let file = dir.path().join("f.txt");
    let first = record_write(&journal, "write_file", &file, Some(b"1"));
    let second = record_write(&journal, "write_file", &file, Some(b"2"));
    fs::write(dir.path().join("state/next"), format!("{first}\n")).unwrap();
    let third = record_write(&journal, "write_file", &file, Some(b"3"));
    assert!(third > second, "{third} after {second}");
    assert_eq!(journal.calls().unwrap().len(), 3);
}

#[test]
fn an_intent_naming_a_content_swept_meanwhile_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    let scope = journal.begin("write_file", "default", "local");
    let recorder = current().unwrap();
    let hash = recorder.store(b"swept").unwrap();
    // A prune by another call sees no record referring to it yet.
    journal.prune().unwrap();
    let change = Change::new(
        dir.path().join("x"),
        Op::Create,
        None,
        Some(Image::stored(hash, 0o644, 5)),
    );
    assert!(matches!(
        recorder.intent(change),
        Err(JournalError::MissingContent { .. })
    ));
    assert_eq!(scope.finish().unwrap(), None);
}

#[test]
fn pinned_contents_survive_the_sweep_while_their_process_lives() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    let kept = journal.store(b"baseline content").unwrap();
    let loose = journal.store(b"nobody refers to this").unwrap();
    journal.pin(std::slice::from_ref(&kept)).unwrap();
    let report = journal.prune().unwrap();
    assert_eq!(report.contents_dropped, 1, "{report:?}");
    assert_eq!(journal.content(&kept).unwrap(), b"baseline content");
    assert!(journal.content(&loose).is_err());
    // The pins of a process that is gone are dropped, and so what only
    // they kept.
    let pins = dir.path().join("state/pins");
    fs::rename(
        pins.join(format!("{}.json", std::process::id())),
        pins.join(format!("{}.json", u32::MAX)),
    )
    .unwrap();
    journal.prune().unwrap();
    assert!(journal.content(&kept).is_err());
    assert_eq!(fs::read_dir(&pins).unwrap().count(), 0);
}

#[test]
fn a_call_with_a_note_and_no_change_is_filed() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    let scope = journal.begin("bash", "default", "local");
    current().unwrap().note("changes not looked for").unwrap();
    let id = scope.finish().unwrap().unwrap();
    let call = journal.call(id).unwrap().unwrap();
    assert!(call.changes.is_empty());
    assert_eq!(call.notes, ["changes not looked for"]);
}

/// Replaces `path` by a rename, as the write path does, recording the
/// file it replaced by a link: returns the call's id and the link's key.
fn record_linked_replace(journal: &Arc<Journal>, path: &Path, new: &[u8]) -> (u64, String) {
    // No background pass: the tests run the passes themselves, at the
    // moment they choose (one sealing before the test changes the file
    // would race it).
    journal.compacting.store(true, Ordering::Release);
    let scope = journal.begin("edit_file", "default", "local");
    let recorder = current().unwrap();
    let parent = File::open(path.parent().unwrap()).unwrap();
    let name = path.file_name().unwrap();
    let stamp = LinkStamp::of_meta(&fs::metadata(path).unwrap());
    let key = recorder.link(&parent, name, stamp, true).unwrap().unwrap();
    assert!(is_linked(&key), "{key}");
    let after = recorder.store_after(new).unwrap();
    let change = Change::new(
        path,
        Op::Modify,
        Some(Image::stored(key.clone(), 0o644, stamp.size)),
        Some(Image::stored(after, 0o644, new.len() as u64)),
    );
    let token = recorder.intent(change).unwrap();
    let temp = path.with_extension("tmp");
    fs::write(&temp, new).unwrap();
    fs::rename(&temp, path).unwrap();
    recorder.done(token);
    (scope.finish().unwrap().unwrap(), key)
}

#[test]
fn a_linked_content_is_read_back_then_sealed_under_its_hash_once() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    let file = dir.path().join("big.txt");
    let old = "line of the old file\n".repeat(5000);
    fs::write(&file, &old).unwrap();
    let (id, key) = record_linked_replace(&journal, &file, b"new\n");
    // Before the seal: the link holds what the file held.
    assert_eq!(journal.content(&key).unwrap(), old.as_bytes());
    // The same content kept again by another call: one stored copy after.
    let other = dir.path().join("other.txt");
    fs::write(&other, &old).unwrap();
    let (second, other_key) = record_linked_replace(&journal, &other, b"x\n");
    journal.compact().unwrap();
    for id in [id, second] {
        let call = journal.call(id).unwrap().unwrap();
        let before = call.changes[0].change.before.as_ref().unwrap();
        assert_eq!(before.hash.as_deref(), Some(hash(old.as_bytes()).as_str()));
        assert_eq!(call.changes[0].change.not_undoable, None);
    }
    assert_eq!(
        journal.content(&hash(old.as_bytes())).unwrap(),
        old.as_bytes()
    );
    // The links are gone; a reader of the older record is sent on to the
    // hash until the next prune sweeps the forward.
    assert_eq!(journal.content(&key).unwrap(), old.as_bytes());
    assert_eq!(journal.content(&other_key).unwrap(), old.as_bytes());
    journal.prune().unwrap();
    assert!(matches!(
        journal.content(&key),
        Err(JournalError::MissingContent { .. })
    ));
    // The content is stored once, compressed.
    let stored: Vec<_> = journal
        .list_objects()
        .unwrap()
        .into_iter()
        .filter(|(k, _, _)| *k == hash(old.as_bytes()))
        .collect();
    assert_eq!(stored.len(), 1);
    assert!(stored[0].2 < old.len() as u64 / 10, "{stored:?}");
}

#[test]
fn a_linked_content_changed_in_place_is_reported_lost_never_misread() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    let file = dir.path().join("big.txt");
    fs::write(&file, "a".repeat(100_000)).unwrap();
    // A second name of the user's for the same file, which a program then
    // writes in place.
    let alias = dir.path().join("alias.txt");
    fs::hard_link(&file, &alias).unwrap();
    let (id, key) = record_linked_replace(&journal, &file, b"new\n");
    {
        let mut out = OpenOptions::new().write(true).open(&alias).unwrap();
        out.write_all(b"bbbb").unwrap();
        out.set_modified(SystemTime::now() + Duration::from_secs(5))
            .unwrap();
    }
    assert!(matches!(
        journal.content(&key),
        Err(JournalError::ChangedInPlace { .. })
    ));
    journal.compact().unwrap();
    let call = journal.call(id).unwrap().unwrap();
    let change = &call.changes[0].change;
    assert_eq!(change.before.as_ref().unwrap().hash, None);
    let reason = change.not_undoable.as_deref().unwrap();
    assert!(reason.contains("changed in place"), "{reason}");
}

#[test]
fn an_interrupted_change_with_linked_contents_is_resolved_by_the_file_itself() {
    let dir = tempfile::tempdir().unwrap();
    let state = settings(dir.path());
    let file = dir.path().join("big.txt");
    let old = "o".repeat(100_000);
    let new = "n".repeat(100_000);
    fs::write(&file, &old).unwrap();
    let temp = dir.path().join("big.tmp");
    fs::write(&temp, &new).unwrap();
    {
        let journal = Journal::open(state.clone()).unwrap();
        let scope = journal.begin("edit_file", "default", "local");
        let recorder = current().unwrap();
        let parent = File::open(dir.path()).unwrap();
        let before = recorder
            .link(
                &parent,
                file.file_name().unwrap(),
                LinkStamp::of_meta(&fs::metadata(&file).unwrap()),
                true,
            )
            .unwrap()
            .unwrap();
        let after = recorder
            .link(
                &parent,
                temp.file_name().unwrap(),
                LinkStamp::of_meta(&fs::metadata(&temp).unwrap()),
                false,
            )
            .unwrap()
            .unwrap();
        let change = Change::new(
            &file,
            Op::Modify,
            Some(Image::stored(before, 0o644, 100_000)),
            Some(Image::stored(after, 0o644, 100_000)),
        );
        recorder.intent(change).unwrap();
        fs::rename(&temp, &file).unwrap();
        // The process dies here: the record stays pending.
        std::mem::forget(scope);
    }
    // A pending record of this very process counts as dead at open.
    let journal = Journal::open(state).unwrap();
    let calls = journal.calls().unwrap();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].changes[0].state, ChangeState::Done);
    journal.compact().unwrap();
    let call = journal.call(calls[0].id).unwrap().unwrap();
    let before = call.changes[0].change.before.as_ref().unwrap();
    assert_eq!(
        journal.content(before.hash.as_ref().unwrap()).unwrap(),
        old.as_bytes()
    );
}

/// The pending record is a log, a line per announcement, each appended
/// once the one before it is on disk: a crash can tear only the last
/// line, whose changes were never made. The next open keeps the lines
/// before it and resolves them against the disk.
#[test]
fn a_pending_log_torn_by_a_crash_keeps_the_batches_before_the_tear() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.txt");
    let second = dir.path().join("second.txt");
    for path in [&first, &second] {
        fs::write(path, "old\n").unwrap();
    }
    let pending = {
        let journal = Journal::open(settings(dir.path())).unwrap();
        let scope = journal.begin("apply_patch", "default", "local");
        let recorder = current().unwrap();
        let old = Image::stored(recorder.store(b"old\n").unwrap(), 0o644, 4);
        let new = Image::stored(recorder.store(b"new\n").unwrap(), 0o644, 4);
        for path in [&first, &second] {
            let change = Change::new(path, Op::Modify, Some(old.clone()), Some(new.clone()));
            recorder.intent(change).unwrap();
            fs::write(path, "new\n").unwrap();
        }
        let id = scope.id().unwrap();
        std::mem::forget(scope);
        let _ = CURRENT.with(|c| c.take());
        journal.settings.dir.join("pending").join(record_name(id))
    };
    let log = fs::read_to_string(&pending).unwrap();
    assert_eq!(log.lines().count(), 2, "a line per announcement: {log}");
    // A third announcement torn half-way by the crash.
    let third = log.lines().last().unwrap();
    let mut torn = OpenOptions::new().append(true).open(&pending).unwrap();
    torn.write_all(&third.as_bytes()[..third.len() / 2])
        .unwrap();
    drop(torn);

    let journal = Journal::open(settings(dir.path())).unwrap();
    assert!(journal.ids("pending").unwrap().is_empty());
    let calls = journal.calls().unwrap();
    assert_eq!(calls.len(), 1);
    let states = change_states(&calls[0]);
    assert_eq!(
        states,
        vec![(first, ChangeState::Done), (second, ChangeState::Done)]
    );
}

/// A crash that tore the first announcement of a call (before its flush
/// ended, so before any change) leaves a record of which nothing parses:
/// the next open removes it.
#[test]
fn a_pending_record_torn_before_its_first_batch_was_flushed_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    drop(Journal::open(settings(dir.path())).unwrap());
    let pending = dir.path().join("state/pending").join(record_name(5));
    fs::write(&pending, br#"{"id":5,"time":17,"tool":"apply_pa"#).unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    assert!(!pending.exists());
    assert!(journal.calls().unwrap().is_empty());
    assert!(journal.next_id().unwrap() >= 1);
}

/// An announcement whose flush failed (or was never made) is dropped
/// unconfirmed: its changes are withdrawn, and the contents it would have
/// flushed are flushed with the next one.
#[test]
fn an_announcement_dropped_unflushed_withdraws_its_changes() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    let scope = journal.begin("write_file", "default", "local");
    let recorder = current().unwrap();
    let old = Image::stored(recorder.store(b"old\n").unwrap(), 0o644, 4);
    let change = Change::new(dir.path().join("x"), Op::Delete, Some(old), None);
    let announcement = recorder.announce(vec![change.clone()]).unwrap();
    // The stored content, the record and the pending folder.
    assert!(announcement.files().len() >= 3, "{announcement:?}");
    drop(announcement);
    assert!(!recorder.0.to_flush.lock().unwrap().is_empty());
    let kept = dir.path().join("y");
    let token = recorder
        .intent(Change::new(&kept, Op::Create, None, None))
        .unwrap();
    recorder.done(token);
    assert!(recorder.0.to_flush.lock().unwrap().is_empty());
    let id = scope.finish().unwrap().unwrap();
    let call = journal.call(id).unwrap().unwrap();
    let paths: Vec<&Path> = call
        .changes
        .iter()
        .map(|c| c.change.path.as_path())
        .collect();
    assert_eq!(paths, vec![kept.as_path()]);
}

/// The background pass compresses what this process stored since the
/// last pass, without listing every content; its first pass (and an
/// explicit compact) lists them all, so contents a process that ended left
/// raw are compressed too.
#[test]
fn the_background_pass_compresses_what_was_stored_since_without_listing_all() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    // The first pass of a process lists everything.
    assert_eq!(journal.compact_recent().unwrap(), 0);
    let left = "left raw by a process that ended\n".repeat(100);
    let left_hash = hash(left.as_bytes());
    let left_path = journal.object_path(&left_hash);
    fs::create_dir_all(left_path.parent().unwrap()).unwrap();
    fs::write(&left_path, &left).unwrap();
    let mine = journal
        .store_unflushed("stored by this process\n".repeat(100).as_bytes())
        .unwrap();
    assert_eq!(journal.compact_recent().unwrap(), 1);
    assert!(!journal.object_path(&mine).exists());
    assert!(journal.object_path(&mine).with_extension("zst").exists());
    assert!(left_path.exists(), "not listed by a recent pass");
    assert_eq!(journal.compact().unwrap(), 1);
    assert!(!left_path.exists());
    assert_eq!(journal.content(&left_hash).unwrap(), left.as_bytes());
    assert_eq!(journal.compact_recent().unwrap(), 0);
}

/// A content the sealing pass stored is referred to by no record until
/// the record takes its new version: another process's prune may sweep it
/// meanwhile. The record then keeps its link (and the link its file)
/// until the next pass, never naming a content that is gone.
#[test]
fn a_seal_whose_content_was_swept_meanwhile_keeps_the_link_for_the_next_pass() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    let file = dir.path().join("a.txt");
    fs::write(&file, "old\n").unwrap();
    let (id, key) = record_linked_replace(&journal, &file, b"new\n");
    let path = journal.settings.dir.join("calls").join(record_name(id));
    let read = read_record(&path).unwrap().unwrap();
    let temp = temp_beside(&path);
    fs::write(&temp, b"{}").unwrap();
    let swept = hash(b"old\n");
    assert!(!journal.has_content(&swept));
    let sealing = [Sealing {
        path: path.clone(),
        read: read.clone(),
        temp: temp.clone(),
        outcome: vec![(key.clone(), Ok(swept))],
    }];
    journal.to_seal.lock().unwrap().clear();
    journal.seal_records(&sealing, &[], true).unwrap();
    assert_eq!(read_record(&path).unwrap().unwrap(), read);
    assert!(journal.object_path(&key).exists());
    assert!(journal.to_seal.lock().unwrap().contains(&id));
    assert_eq!(journal.content(&key).unwrap(), b"old\n");
    // The next pass seals it.
    let _ = fs::remove_file(&temp);
    assert_eq!(journal.seal().unwrap(), 1);
    let sealed = read_record(&path).unwrap().unwrap();
    let before = sealed.changes[0].change.before.as_ref().unwrap();
    assert_eq!(before.hash.as_deref(), Some(hash(b"old\n").as_str()));
}

/// The id counter is rewritten in place at one width; one that is damaged
/// (here longer than that width, so an overwrite alone would leave its
/// tail) is not trusted: the ids on disk decide, and the counter is
/// rewritten whole, so it is read again from the next call on.
#[test]
fn a_damaged_id_counter_yields_to_the_records_and_is_rewritten_whole() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    let first = record_write(&journal, "write_file", &dir.path().join("a"), Some(b"1"));
    let counter = dir.path().join("state/next");
    assert_eq!(
        fs::read_to_string(&counter).unwrap(),
        format!("{:020}\n", first + 1)
    );
    fs::write(&counter, "9".repeat(40)).unwrap();
    assert_eq!(journal.next_id().unwrap(), first + 1);
    assert_eq!(
        fs::read_to_string(&counter).unwrap(),
        format!("{:020}\n", first + 2)
    );
    assert_eq!(journal.next_id().unwrap(), first + 2);
}

/// A call is filed by appending its whole record to its log and renaming
/// the log into `calls/`: the record read back is the call's, with every
/// change once, though the log's batches are still in the file.
#[test]
fn a_filed_call_is_its_log_ending_with_the_whole_record() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    let (first, second) = (dir.path().join("first.txt"), dir.path().join("second.txt"));
    let scope = journal.begin("apply_patch", "default", "local");
    let recorder = current().unwrap();
    for path in [&first, &second] {
        let after = Image::stored(recorder.store(b"new\n").unwrap(), 0o644, 4);
        let token = recorder
            .intent(Change::new(path, Op::Create, None, Some(after)))
            .unwrap();
        fs::write(path, "new\n").unwrap();
        recorder.done(token);
    }
    let id = scope.finish().unwrap().unwrap();
    assert!(journal.ids("pending").unwrap().is_empty());
    let file = fs::read_to_string(journal.record_path("calls", id)).unwrap();
    assert_eq!(
        file.lines().filter(|line| !line.is_empty()).count(),
        3,
        "{file}"
    );
    let record = journal.call(id).unwrap().unwrap();
    assert_eq!(
        change_states(&record),
        vec![(first, ChangeState::Done), (second, ChangeState::Done)]
    );
}

/// A crash between filing a call's record in its log and the rename
/// leaves the log in `pending/` ending with the whole record: the next
/// open files that record, its changes once each.
#[test]
fn a_log_filed_but_not_renamed_is_filed_once_at_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.txt");
    let (id, record) = {
        let journal = Journal::open(settings(dir.path())).unwrap();
        let id = record_write(&journal, "write_file", &path, Some(b"one\n"));
        let record = journal.call(id).unwrap().unwrap();
        fs::rename(
            journal.record_path("calls", id),
            journal.record_path("pending", id),
        )
        .unwrap();
        (id, record)
    };
    let journal = Journal::open(settings(dir.path())).unwrap();
    assert!(journal.ids("pending").unwrap().is_empty());
    assert_eq!(journal.call(id).unwrap().unwrap(), record);
    assert_eq!(journal.calls().unwrap().len(), 1);
}

/// A filed log whose last line a crash tore is reported, not read as the
/// batches before it.
#[test]
fn a_filed_log_torn_in_its_last_line_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(settings(dir.path())).unwrap();
    let id = record_write(
        &journal,
        "write_file",
        &dir.path().join("a.txt"),
        Some(b"x\n"),
    );
    let path = journal.record_path("calls", id);
    let file = fs::read(&path).unwrap();
    fs::write(&path, &file[..file.len() - 10]).unwrap();
    assert!(matches!(
        journal.call(id),
        Err(JournalError::Corrupt { .. })
    ));
}

/// The background pass waits for the calls to pause, then compresses what
/// they stored; a pass whose journal is dropped meanwhile gives up, and the
/// next journal opened on the directory does the work.
#[test]
fn the_background_pass_runs_in_a_pause_and_leaves_a_dropped_journal_alone() {
    let dir = tempfile::tempdir().unwrap();
    let body = "a line that compresses well\n".repeat(100);
    let journal = Journal::open(settings(dir.path())).unwrap();
    record_write(
        &journal,
        "write_file",
        &dir.path().join("a.txt"),
        Some(body.as_bytes()),
    );
    let packed = journal
        .object_path(&hash(body.as_bytes()))
        .with_extension("zst");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !packed.exists() {
        assert!(std::time::Instant::now() < deadline, "never compacted");
        std::thread::sleep(Duration::from_millis(20));
    }

    let other = "another line that compresses well\n".repeat(100);
    record_write(
        &journal,
        "write_file",
        &dir.path().join("b.txt"),
        Some(other.as_bytes()),
    );
    let packed = journal
        .object_path(&hash(other.as_bytes()))
        .with_extension("zst");
    drop(journal);
    std::thread::sleep(COMPACT_AFTER_PAUSE * 3);
    assert!(!packed.exists(), "a dropped journal's pass gave up");
    let journal = Journal::open(settings(dir.path())).unwrap();
    journal.compact_recent().unwrap();
    assert!(packed.exists());
}
