//! Authentication: which tenant an API key belongs to. Keys come from the
//! configuration (`[[tenants]]` entries naming an environment variable or a
//! file that holds their keys) and from a keys file of `tenant:key` lines;
//! they are kept only in memory, compared in constant time, and never
//! printed (`Debug` shows tenants and counts, never a key). The gRPC edge
//! (`grpc/auth.rs`) asks [`ApiKeys::authenticate`] who a caller is.

mod config;
mod keys;

pub use config::{AuthConfigError, TenantConfig};
pub use keys::MIN_RECOMMENDED_KEY_LEN;
pub use keys::{unnamed_key_name, ApiKeys, Credential, MAX_KEY_NAME_CHARS};
