use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config: {0}")]
    Parse(#[from] toml::de::Error),
    #[error("unknown profile {0:?}")]
    UnknownProfile(String),
}

#[derive(Debug, Clone, Deserialize)]
pub struct Profile {
    pub name: String,
    pub threads: usize,
    pub timeout_secs: u64,
    #[serde(default)]
    pub env: HashMap<String, String>,
}

#[derive(Debug, Deserialize)]
pub struct Config {
    pub default_profile: String,
    pub profiles: Vec<Profile>,
}

impl Config {
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let config: Config = toml::from_str(&text)?; 
        Ok(config)
    }

    pub fn profile(&self, name: &str) -> Result<&Profile, ConfigError> {
        self.profiles
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| ConfigError::UnknownProfile(name.to_string()))
    }

    pub fn default(&self) -> Result<&Profile, ConfigError> {
        self.profile(&self.default_profile)
    }
}

impl Profile {
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout_secs)
    }

    pub fn merged_env(&self, base: &HashMap<String, String>) -> HashMap<String, String> {
        let mut env = base.clone();
        for (key, value) in &self.env {
            env.insert(key.clone(), value.clone());
        }
        env
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Config {
        Config {
            default_profile: "dev".to_string(),
            profiles: vec![Profile {
                name: "dev".to_string(),
                threads: 4,
                timeout_secs: 30,
                env: HashMap::new(),
            }],
        }
    }

    #[test]
    fn finds_default_profile() {
        let config = sample();
        let profile = config.default().unwrap();
        assert_eq!(profile.threads, 4);
    }

    #[test]
    fn unknown_profile_is_an_error() {
        let config = sample();
        assert!(matches!(
            config.profile("prod"),
            Err(ConfigError::UnknownProfile(_))
        ));
    }
}
