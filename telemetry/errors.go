package telemetry

import "errors"

// Errors of New: the settings name something this build cannot do. Package
// config refuses the same settings at start, naming the variable.
var (
	// errProtocol: an OTLP protocol other than http/protobuf or http/json
	// (grpc is not built in).
	errProtocol = errors.New("unsupported OTLP protocol")
	// errSampler: a sampler name the Go SDK does not implement.
	errSampler = errors.New("unsupported sampler")
	// errSamplerArg: a sampling ratio that is not a number in [0, 1].
	errSamplerArg = errors.New("invalid sampler argument")
)
