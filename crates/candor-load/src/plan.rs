//! A run as it will be made: its protocol-neutral settings ([`LoadConfig`]) beside what it speaks
//! (one protocol unit, chosen by the registry from the target and the protocol flags), checked
//! together before anything starts.

use crate::registry::{choose, ProtocolFlags};
use candor_core::results::ProtocolName;
use candor_engine::config::{LoadConfig, LoadConfigError, Target};
use candor_engine::seam::unit::ProtocolUnit;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// The settings of a run and its protocol. It reads as its [`LoadConfig`] (`plan.threads`), so
/// code that needs only the neutral settings takes `&LoadConfig` and is handed the plan.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub config: LoadConfig,
    pub protocol: Arc<dyn ProtocolUnit>,
}

impl RunPlan {
    /// A run against `target` speaking what `flags` choose, every other setting at its default.
    pub fn new(target: Target, flags: ProtocolFlags) -> Result<RunPlan, LoadConfigError> {
        let protocol = choose(&target, flags)?;
        Ok(RunPlan {
            config: LoadConfig::new(target),
            protocol,
        })
    }

    /// The settings against each other and against the protocol; run this before starting
    /// anything.
    pub fn validate(&self) -> Result<(), LoadConfigError> {
        self.config.validate(&*self.protocol)
    }

    /// The protocol's name in the results.
    pub fn protocol_name(&self) -> ProtocolName {
        self.protocol.name(&self.config.target)
    }
}

impl Deref for RunPlan {
    type Target = LoadConfig;

    fn deref(&self) -> &LoadConfig {
        &self.config
    }
}

impl DerefMut for RunPlan {
    fn deref_mut(&mut self) -> &mut LoadConfig {
        &mut self.config
    }
}
