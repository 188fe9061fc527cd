package instrument

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Span attributes the services' spans share, so that one query finds a
// tenant's, a run's or an agent's spans whichever service made them.
const (
	AttrTenant    = attribute.Key("novaos.tenant_id")
	AttrRun       = attribute.Key("novaos.run_id")
	AttrInstance  = attribute.Key("novaos.instance_id")
	AttrAgent     = attribute.Key("gen_ai.agent.id")
	AttrOperation = attribute.Key("gen_ai.operation.name")
	AttrErrorType = attribute.Key("error.type")
)

// Failed marks span failed: its error.type is errorType (a bounded
// class of failure, never an error's text) and its status an error
// described by description.
func Failed(span trace.Span, errorType, description string) {
	span.SetAttributes(AttrErrorType.String(errorType))
	span.SetStatus(codes.Error, description)
}
