package telemetry

import (
	"fmt"
	"strconv"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// samplers are the OTEL_TRACES_SAMPLER names the Go SDK implements.
var samplers = []string{
	"always_on", "always_off", "traceidratio",
	"parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio",
}

// newSampler is the sampler an OTEL_TRACES_SAMPLER name and its argument
// describe; "" is parentbased_always_on, the SDK's default: a call is
// traced when its caller's trace is sampled, or when it starts a trace.
func newSampler(name, arg string) (sdktrace.Sampler, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	ratio := func() (sdktrace.Sampler, error) {
		r, err := parseRatio(arg)
		if err != nil {
			return nil, err
		}
		return sdktrace.TraceIDRatioBased(r), nil
	}
	switch name {
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		return ratio()
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		return sdktrace.ParentBased(r), nil
	}
	return nil, fmt.Errorf("%w %q (want %s)", errSampler, name, strings.Join(samplers, ", "))
}

// parseRatio parses the argument of a traceidratio sampler: a number from
// 0 to 1; "" is 1.
func parseRatio(arg string) (float64, error) {
	arg = strings.TrimSpace(arg)
	if arg == "" {
		return 1, nil
	}
	r, err := strconv.ParseFloat(arg, 64)
	if err != nil || r < 0 || r > 1 {
		return 0, fmt.Errorf("%w %q: want a ratio from 0 to 1", errSamplerArg, arg)
	}
	return r, nil
}
