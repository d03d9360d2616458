//! Where the server's outbound requests may go. Two kinds of destination:
//!
//! - **Named by a caller or a model** (A2A push notification URLs today):
//!   held to [`AddressPolicy`]. Only global addresses (`address.rs`, from
//!   the IANA special-purpose registries), checked on the address actually
//!   connected to (the client's resolver keeps global answers only, and a
//!   literal address is checked before the request), never through a proxy
//!   (a proxy would connect to an address the server never sees), and no
//!   redirect followed; unless the operator allows internal addresses.
//!   Any new caller-supplied URL goes through it too.
//! - **Configured by the operator** (model providers, HTTP tools, MCP
//!   servers, webhooks): trusted as configured, proxies from the
//!   environment included, but a redirect is followed only within the
//!   configured URL's origin ([`redirects`]), so that neither the request
//!   nor its configured headers reach another host.
//!
//! Every client is still built from [`crate::http_client::builder`].

pub mod address;
mod policy;
pub mod redirects;

pub use address::Inward;
pub use policy::{AddressPolicy, Refusal};
