"""Client code for agentd's gRPC API; the version of the API is a
subpackage: `agentd.v1`."""
