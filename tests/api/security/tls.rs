//! TLS and mutual TLS with certificates made for the test (rcgen): a TLS
//! client that trusts the CA is served, a plaintext one is not; with a
//! client CA configured, only clients with a certificate it signed are.

use agentd::pb;
use agentd::pb::agent_service_client::AgentServiceClient;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::Code;

use super::auth::ACME_KEY;
use super::server::{keyed, write_file, SecureServer};
use crate::helpers::{collect, finish_reason};

/// A certificate and its key, PEM.
struct Pem {
    cert: String,
    key: String,
}

/// A certificate authority that signs test certificates.
struct Authority {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Authority {
    fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let key = KeyPair::generate().expect("CA key");
        let cert = params.self_signed(&key).expect("CA certificate");
        Self {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    fn sign(&self, names: &[&str], usage: ExtendedKeyUsagePurpose) -> Pem {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names.clone()).expect("leaf params");
        params
            .distinguished_name
            .push(DnType::CommonName, names[0].as_str());
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![usage];
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().expect("leaf key");
        let cert = params.signed_by(&key, &self.issuer).expect("leaf certificate");
        Pem {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }
}

/// A server speaking TLS with a certificate for `localhost` signed by
/// `ca`; with `client_ca`, mutual TLS against it.
async fn tls_server(ca: &Authority, client_ca: Option<&Authority>, keys: Option<&str>) -> SecureServer {
    let server_pem = ca.sign(&["localhost"], ExtendedKeyUsagePurpose::ServerAuth);
    let client_ca = client_ca.map(|authority| authority.pem.clone());
    let keys = keys.map(str::to_owned);
    SecureServer::start(move |dir, settings| {
        settings.tls.cert = Some(write_file(dir, "server.pem", &server_pem.cert));
        settings.tls.key = Some(write_file(dir, "server.key", &server_pem.key));
        settings.tls.client_ca = client_ca.map(|pem| write_file(dir, "client-ca.pem", &pem));
        if let Some(keys) = keys {
            settings.auth.api_keys_file = Some(write_file(dir, "api.keys", &keys));
        }
    })
    .await
}

fn https(server: &SecureServer, tls: ClientTlsConfig) -> Endpoint {
    Endpoint::from_shared(format!("https://localhost:{}", server.addr.port()))
        .expect("endpoint")
        .tls_config(tls)
        .expect("client TLS config")
}

fn trusting(ca: &Authority) -> ClientTlsConfig {
    ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(&ca.pem))
        .domain_name("localhost")
}

/// Lists the agents over `endpoint`; any failure (connecting or calling)
/// as text.
async fn list_agents(endpoint: Endpoint) -> Result<Channel, String> {
    let channel = endpoint.connect().await.map_err(|e| format!("connect: {e:?}"))?;
    AgentServiceClient::new(channel.clone())
        .list_agents(pb::ListAgentsRequest {})
        .await
        .map_err(|status| format!("call: {status:?}"))?;
    Ok(channel)
}

#[tokio::test]
async fn a_tls_client_is_served_and_a_plaintext_one_is_not() {
    let ca = Authority::new("agentd test CA");
    let server = tls_server(&ca, None, None).await;
    let channel = list_agents(https(&server, trusting(&ca)))
        .await
        .expect("TLS client");
    let chunks = collect(
        AgentServiceClient::new(channel)
            .stream_agent(pb::StreamAgentRequest {
                prompt: "plain over TLS".into(),
                ..Default::default()
            })
            .await
            .expect("StreamAgent over TLS")
            .into_inner(),
    )
    .await
    .expect("stream over TLS");
    assert_eq!(finish_reason(&chunks), pb::FinishReason::Stop);

    let plaintext = list_agents(server.endpoint()).await;
    assert!(plaintext.is_err(), "plaintext must not be served: {plaintext:?}");

    let stranger = Authority::new("someone else's CA");
    let untrusted = list_agents(https(&server, trusting(&stranger))).await;
    assert!(
        untrusted.is_err(),
        "a client that does not trust the server's CA fails: {untrusted:?}"
    );
}

#[tokio::test]
async fn mutual_tls_requires_a_client_certificate_from_the_client_ca() {
    let server_ca = Authority::new("agentd server CA");
    let client_ca = Authority::new("agentd client CA");
    let server = tls_server(&server_ca, Some(&client_ca), None).await;

    let client = client_ca.sign(&["billing-service"], ExtendedKeyUsagePurpose::ClientAuth);
    let with_cert = trusting(&server_ca).identity(Identity::from_pem(&client.cert, &client.key));
    list_agents(https(&server, with_cert))
        .await
        .expect("a client certificate the CA signed");

    let without_cert = list_agents(https(&server, trusting(&server_ca))).await;
    assert!(without_cert.is_err(), "no client certificate: {without_cert:?}");

    let rogue_ca = Authority::new("rogue CA");
    let rogue = rogue_ca.sign(&["billing-service"], ExtendedKeyUsagePurpose::ClientAuth);
    let rogue = trusting(&server_ca).identity(Identity::from_pem(&rogue.cert, &rogue.key));
    let refused = list_agents(https(&server, rogue)).await;
    assert!(refused.is_err(), "a certificate another CA signed: {refused:?}");
}

#[tokio::test]
async fn without_a_key_the_client_certificate_s_subject_decides() {
    let server_ca = Authority::new("agentd server CA");
    let client_ca = Authority::new("agentd client CA");
    let server = tls_server(&server_ca, Some(&client_ca), None).await;
    let client = client_ca.sign(&["billing-service"], ExtendedKeyUsagePurpose::ClientAuth);
    let with_cert = trusting(&server_ca).identity(Identity::from_pem(&client.cert, &client.key));
    let mut client = AgentServiceClient::new(list_agents(https(&server, with_cert)).await.expect("mTLS"));
    let asked = collect(
        client
            .stream_agent(pb::StreamAgentRequest {
                prompt: "Help me pick a plan".into(),
                ..Default::default()
            })
            .await
            .expect("StreamAgent")
            .into_inner(),
    )
    .await
    .expect("the stream");
    let run_id = asked[0].run_id.clone();
    let answer = pb::ResumeRequest {
        run_id: run_id.clone(),
        answer: Some(pb::resume_request::Answer::Text("Pro".into())),
        ..Default::default()
    };
    collect(client.resume(answer).await.expect("Resume").into_inner())
        .await
        .expect("the continuation");
    let run = client
        .get_run(pb::GetRunRequest { run_id })
        .await
        .expect("GetRun")
        .into_inner();
    assert_eq!(run.decisions.len(), 1, "{:?}", run.decisions);
    assert_eq!(run.decisions[0].decided_by, "CN=billing-service");
    assert_eq!(run.decisions[0].source(), pb::DecisionSource::Grpc);
}

#[tokio::test]
async fn tls_and_api_keys_together() {
    let ca = Authority::new("agentd test CA");
    let server = tls_server(&ca, None, Some(&format!("acme:{ACME_KEY}\n"))).await;
    let channel = https(&server, trusting(&ca))
        .connect()
        .await
        .expect("TLS connect");
    let status = keyed(channel.clone(), None)
        .list_agents(pb::ListAgentsRequest {})
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    keyed(channel, Some(ACME_KEY))
        .list_agents(pb::ListAgentsRequest {})
        .await
        .expect("TLS and a key");
}
