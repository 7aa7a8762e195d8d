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
//     and a maintenance pod; kubernetes/replicas/ is the variant for N
//     replicas on one PostgreSQL journal; kubernetes/README.md explains
//     them.
//   - helm/toolguard is a Helm chart that renders both variants from
//     values (journal.backend bolt or postgres, replicaCount, image, rule
//     packs, config, Secrets, probes, resources, the agent container);
//     its packs/ are copies of ../rules/packs. Its README.md has the
//     values.
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
// outlasts the drain timeout; for the replicas, rolling updates that keep
// every pod until its successor is ready, a PodDisruptionBudget, and the
// DSN, journal secret and CA from Secrets. The checks take parsed
// documents, so that the Helm chart's renderings go through the same ones:
// helm lint and helm template run with several value sets, and values the
// chart must refuse (more than one replica on bbolt) must fail. They need
// no cluster and no Docker engine; the chart's tests need helm
// ($TOOLGUARD_HELM, ../bin/helm or PATH) and skip without it unless CI is
// set.
package deploy
