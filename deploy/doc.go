// Package deploy holds no code: it is the home of toolguard's deployment
// files and of the tests that keep them honest.
//
// # Files
//
//   - ../Dockerfile and ../.dockerignore build the image: a static binary
//     (CGO_ENABLED=0) on gcr.io/distroless/static-debian12:nonroot, running
//     as uid 65532, with the journal and the CA on volumes.
//   - docker/config.yaml is the config file baked into the image.
//   - kubernetes/ is an example of an agent with toolguard as a native
//     sidecar: a Deployment (one replica, Recreate), the journal's
//     PersistentVolumeClaim, the config and rule ConfigMaps, a NetworkPolicy
//     and a maintenance pod; kubernetes/README.md explains them.
//   - ../docs/operations.md is the operators' runbook.
//
// # Tests
//
// go test ./deploy/ parses every YAML document under kubernetes/ and the
// Dockerfile and checks the invariants the rest of toolguard relies on: the
// config the sidecar ends up with (image environment, container
// environment and ConfigMap together) passes config.Validate, its paths
// lie on the right volumes, the probes hit /healthz and /readyz on the admin
// port, tokens only ever come from a Secret, the agent is pointed at the
// proxy and trusts its CA, the rule files parse, and the grace period
// outlasts the drain timeout. They need no cluster and no Docker engine.
package deploy
