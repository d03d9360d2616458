//! The authenticating interceptor: the door's [`Authenticator`] decides who
//! a gRPC caller is, from its `authorization` metadata, and puts the
//! tenant and the key's name in the request's extensions, where the
//! handlers take them from ([`tenant_of`], `caller::decider_of`). Missing
//! or wrong credentials are UNAUTHENTICATED before the request is decoded.

use tonic::service::Interceptor;
use tonic::{Code, Request, Status};
use tonic_types::StatusExt;

use crate::domain::Tenant;
pub use crate::door::Authenticator;
use crate::door::Unauthenticated;

impl Interceptor for Authenticator {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        let authorization = request
            .metadata()
            .get("authorization")
            .map(|value| value.as_bytes().to_vec());
        self.admit(authorization.as_deref(), request.extensions_mut())
            .map_err(status)?;
        Ok(request)
    }
}

/// UNAUTHENTICATED, with the refusal's reason as its ErrorInfo.
pub fn status(refusal: Unauthenticated) -> Status {
    Status::with_error_details(
        Code::Unauthenticated,
        refusal.message,
        super::status::info(refusal.reason, &[]),
    )
}

/// The tenant the interceptor found for this request; the default tenant
/// when the service is used without the interceptor.
pub fn tenant_of<T>(request: &Request<T>) -> Tenant {
    crate::door::tenant(request.extensions())
}
