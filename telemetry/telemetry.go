// Package telemetry sets up the service's OpenTelemetry traces and metrics
// from the standard OTEL_* variables, and the slog handler that stamps logs
// with trace and span ids.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Options say which process is being instrumented and where the OTEL_*
// variables come from.
type Options struct {
	// ServiceName is used unless OTEL_SERVICE_NAME is set.
	ServiceName string
	Version     string
	Getenv      func(string) string
	// SpanExporter, when set, replaces the exporter chosen from the
	// environment; tests pass an in-memory one and get synchronous export.
	SpanExporter sdktrace.SpanExporter
}

// Telemetry holds the providers every instrumented component is given
// explicitly, and the Prometheus registry /metrics serves.
type Telemetry struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	Propagator     propagation.TextMapPropagator
	Delivery       *DeliveryMetrics

	registry  *prometheus.Registry
	shutdowns []func(context.Context) error
}

// Setup builds the tracer and meter providers. Traces go where
// OTEL_TRACES_EXPORTER says (otlp, console, none); when it is unset they go
// to OTLP if an OTLP endpoint is configured and nowhere otherwise. Metrics are
// always available to Prometheus through MetricsHandler, and are also pushed
// when OTEL_METRICS_EXPORTER is otlp or console.
func Setup(ctx context.Context, opts Options) (*Telemetry, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	res, err := newResource(ctx, opts)
	if err != nil {
		return nil, err
	}
	t := &Telemetry{
		Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		registry:   prometheus.NewRegistry(),
	}

	tp, err := newTracerProvider(ctx, getenv, res, opts.SpanExporter)
	if err != nil {
		return nil, err
	}
	t.TracerProvider = tp
	t.shutdowns = append(t.shutdowns, tp.Shutdown)

	mp, err := t.newMeterProvider(ctx, getenv, res)
	if err != nil {
		_ = t.Shutdown(ctx)
		return nil, err
	}
	t.MeterProvider = mp
	t.shutdowns = append(t.shutdowns, mp.Shutdown)

	t.Delivery, err = NewDeliveryMetrics(mp)
	if err != nil {
		_ = t.Shutdown(ctx)
		return nil, err
	}
	return t, nil
}

func newResource(ctx context.Context, opts Options) (*resource.Resource, error) {
	// Detectors later in the list win, so OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES override the defaults given here.
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(opts.ServiceName), semconv.ServiceVersion(opts.Version)),
		resource.WithFromEnv(),
		resource.WithHost(),
		resource.WithProcessPID(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	return res, nil
}

func newTracerProvider(ctx context.Context, getenv func(string) string, res *resource.Resource, override sdktrace.SpanExporter) (*sdktrace.TracerProvider, error) {
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if override != nil {
		return sdktrace.NewTracerProvider(append(opts, sdktrace.WithSyncer(override))...), nil
	}
	exp, err := spanExporter(ctx, getenv)
	if err != nil {
		return nil, err
	}
	switch {
	case exp != nil:
		opts = append(opts, sdktrace.WithBatcher(exp))
	case getenv("OTEL_TRACES_SAMPLER") == "":
		// Nothing exports spans: record none (an unsampled span is
		// allocation-free), unless a sampler was asked for. Trace and span
		// ids are still made and propagated, so logs keep their trace_id.
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())))
	}
	return sdktrace.NewTracerProvider(opts...), nil
}

// spanExporter is the exporter the OTEL_* variables choose, or nil when
// nothing should receive spans.
func spanExporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	if !tracesWanted(getenv) {
		return nil, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("trace exporter (OTEL_TRACES_EXPORTER): %w", err)
	}
	if autoexport.IsNoneSpanExporter(exp) {
		return nil, nil
	}
	return exp, nil
}

// tracesWanted is false when nothing says where traces should go: the SDK's
// own default (OTLP to localhost) would only log export errors.
func tracesWanted(getenv func(string) string) bool {
	if v := getenv("OTEL_TRACES_EXPORTER"); v != "" {
		return v != "none"
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

func (t *Telemetry) newMeterProvider(ctx context.Context, getenv func(string) string, res *resource.Resource) (*sdkmetric.MeterProvider, error) {
	if err := t.registry.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("register Go collector: %w", err)
	}
	if err := t.registry.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("register process collector: %w", err)
	}
	promExporter, err := otelprom.New(otelprom.WithRegisterer(t.registry), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	opts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(promExporter)}
	switch getenv("OTEL_METRICS_EXPORTER") {
	case "otlp", "console":
		reader, err := autoexport.NewMetricReader(ctx)
		if err != nil {
			return nil, fmt.Errorf("metric exporter (OTEL_METRICS_EXPORTER): %w", err)
		}
		opts = append(opts, sdkmetric.WithReader(reader))
	}
	return sdkmetric.NewMeterProvider(opts...), nil
}

// MetricsHandler serves every metric in the Prometheus text format.
func (t *Telemetry) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{})
}

// Shutdown flushes pending spans and metrics.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	for i := len(t.shutdowns) - 1; i >= 0; i-- {
		if err := t.shutdowns[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry shutdown: %w", err)
	}
	return nil
}

// EnvironmentVariables are the standard OTEL_* variables this service
// documents and honours (through the OpenTelemetry SDK), beside the ones
// config.Names lists.
func EnvironmentVariables() []string {
	return []string{
		"OTEL_SERVICE_NAME",
		"OTEL_RESOURCE_ATTRIBUTES",
		"OTEL_TRACES_EXPORTER",
		"OTEL_METRICS_EXPORTER",
		"OTEL_TRACES_SAMPLER",
		"OTEL_TRACES_SAMPLER_ARG",
		"OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_HEADERS",
		"OTEL_EXPORTER_OTLP_TIMEOUT",
		"OTEL_EXPORTER_OTLP_INSECURE",
		"OTEL_METRIC_EXPORT_INTERVAL",
	}
}
