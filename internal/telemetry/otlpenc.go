package telemetry

import (
	"math"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkinstrumentation "go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of the OTLP 1.x messages a trace export carries, as
// go.opentelemetry.io/proto/otlp generates them from opentelemetry-proto.
const (
	// collector.trace.v1.ExportTraceServiceRequest
	fRequestResourceSpans protowire.Number = 1

	// trace.v1.ResourceSpans
	fResourceSpansResource   protowire.Number = 1
	fResourceSpansScopeSpans protowire.Number = 2
	fResourceSpansSchemaURL  protowire.Number = 3

	// resource.v1.Resource
	fResourceAttributes protowire.Number = 1

	// trace.v1.ScopeSpans
	fScopeSpansScope     protowire.Number = 1
	fScopeSpansSpans     protowire.Number = 2
	fScopeSpansSchemaURL protowire.Number = 3

	// common.v1.InstrumentationScope
	fScopeName       protowire.Number = 1
	fScopeVersion    protowire.Number = 2
	fScopeAttributes protowire.Number = 3

	// trace.v1.Span
	fSpanTraceID           protowire.Number = 1
	fSpanSpanID            protowire.Number = 2
	fSpanTraceState        protowire.Number = 3
	fSpanParentSpanID      protowire.Number = 4
	fSpanName              protowire.Number = 5
	fSpanKind              protowire.Number = 6
	fSpanStartTime         protowire.Number = 7 // fixed64
	fSpanEndTime           protowire.Number = 8 // fixed64
	fSpanAttributes        protowire.Number = 9
	fSpanDroppedAttributes protowire.Number = 10
	fSpanEvents            protowire.Number = 11
	fSpanDroppedEvents     protowire.Number = 12
	fSpanLinks             protowire.Number = 13
	fSpanDroppedLinks      protowire.Number = 14
	fSpanStatus            protowire.Number = 15
	fSpanFlags             protowire.Number = 16 // fixed32

	// trace.v1.Span.Event
	fEventTime              protowire.Number = 1 // fixed64
	fEventName              protowire.Number = 2
	fEventAttributes        protowire.Number = 3
	fEventDroppedAttributes protowire.Number = 4

	// trace.v1.Span.Link
	fLinkTraceID           protowire.Number = 1
	fLinkSpanID            protowire.Number = 2
	fLinkTraceState        protowire.Number = 3
	fLinkAttributes        protowire.Number = 4
	fLinkDroppedAttributes protowire.Number = 5
	fLinkFlags             protowire.Number = 6 // fixed32

	// trace.v1.Status
	fStatusMessage protowire.Number = 2
	fStatusCode    protowire.Number = 3

	// common.v1.KeyValue
	fKeyValueKey   protowire.Number = 1
	fKeyValueValue protowire.Number = 2

	// common.v1.AnyValue (a oneof: a member is written even when zero)
	fAnyString protowire.Number = 1
	fAnyBool   protowire.Number = 2
	fAnyInt    protowire.Number = 3
	fAnyDouble protowire.Number = 4 // fixed64
	fAnyArray  protowire.Number = 5
	fAnyKVList protowire.Number = 6
	fAnyBytes  protowire.Number = 7

	// common.v1.ArrayValue and common.v1.KeyValueList
	fListValues protowire.Number = 1
)

// Values of trace.v1.Status.StatusCode, which differ from otel/codes'.
const (
	statusCodeOK    = 1
	statusCodeError = 2
)

// Bits of trace.v1.SpanFlags above the W3C trace flags.
const (
	spanFlagsHasIsRemote = 0x100
	spanFlagsIsRemote    = 0x200
)

// spanEncoder writes an ExportTraceServiceRequest straight from the
// SDK's spans into one buffer it reuses, with what it needs to group
// them kept from one batch to the next: after the first batches it
// allocates nothing.
//
// A message's length goes before it, so each is opened with one byte
// reserved for its length and, on close, moved up when the length
// needs more: lengths stay minimal varints and nothing is encoded
// twice.
type spanEncoder struct {
	buf []byte

	resources  []resourceGroup
	scopes     []scopeGroup
	byResource map[attribute.Distinct]int
	byScope    map[scopeKey]int
	spanGroup  []int // scope group of each span of the batch, -1 for nil
	order      []int // the batch's indexes, grouped
}

// resourceGroup is a resource of the batch, with the scopes under it
// linked through scopeGroup.next in the order they first appear.
type resourceGroup struct {
	res         *resource.Resource
	first, last int
}

type scopeGroup struct {
	scope sdkinstrumentation.Scope
	next  int
	n     int // spans
	at    int // of the spans in spanEncoder.order
}

// scopeKey groups spans as OpenTelemetry's own OTLP exporter does: by
// the resource's attribute set, then the whole instrumentation scope.
type scopeKey struct {
	res   attribute.Distinct
	scope sdkinstrumentation.Scope
}

// encode returns the request carrying spans, valid until the next call.
// Resources and their scopes go in the order they first appear, and the
// spans of a scope in the batch's order.
func (e *spanEncoder) encode(spans []sdktrace.ReadOnlySpan) []byte {
	e.buf = e.buf[:0]
	e.group(spans)
	for _, rg := range e.resources {
		rs := e.open(fRequestResourceSpans)
		if rg.res != nil {
			r := e.open(fResourceSpansResource)
			e.set(fResourceAttributes, rg.res.Set())
			e.close(r)
		}
		for g := rg.first; g >= 0; g = e.scopes[g].next {
			e.scopeSpans(spans, &e.scopes[g])
		}
		e.string(fResourceSpansSchemaURL, rg.res.SchemaURL())
		e.close(rs)
	}
	return e.buf
}

// group fills resources, scopes and order for spans.
func (e *spanEncoder) group(spans []sdktrace.ReadOnlySpan) {
	e.resources, e.scopes = e.resources[:0], e.scopes[:0]
	if e.byResource == nil {
		e.byResource, e.byScope = make(map[attribute.Distinct]int), make(map[scopeKey]int)
	}
	clear(e.byResource)
	clear(e.byScope)
	e.spanGroup = e.spanGroup[:0]
	n := 0
	for _, s := range spans {
		if s == nil {
			e.spanGroup = append(e.spanGroup, -1)
			continue
		}
		res := s.Resource()
		k := scopeKey{res: res.Equivalent(), scope: s.InstrumentationScope()}
		g, ok := e.byScope[k]
		if !ok {
			r, ok := e.byResource[k.res]
			if !ok {
				r = len(e.resources)
				e.byResource[k.res] = r
				e.resources = append(e.resources, resourceGroup{res: res, first: -1, last: -1})
			}
			g = len(e.scopes)
			e.byScope[k] = g
			e.scopes = append(e.scopes, scopeGroup{scope: k.scope, next: -1})
			if rg := &e.resources[r]; rg.last < 0 {
				rg.first, rg.last = g, g
			} else {
				e.scopes[rg.last].next, rg.last = g, g
			}
		}
		e.scopes[g].n++
		e.spanGroup = append(e.spanGroup, g)
		n++
	}
	at := 0
	for _, rg := range e.resources {
		for g := rg.first; g >= 0; g = e.scopes[g].next {
			e.scopes[g].at = at
			at += e.scopes[g].n
		}
	}
	e.order = slices.Grow(e.order[:0], n)[:n]
	for g := range e.scopes {
		e.scopes[g].n = 0 // counts the spans placed below
	}
	for i, g := range e.spanGroup {
		if g < 0 {
			continue
		}
		sg := &e.scopes[g]
		e.order[sg.at+sg.n] = i
		sg.n++
	}
}

func (e *spanEncoder) scopeSpans(spans []sdktrace.ReadOnlySpan, sg *scopeGroup) {
	ss := e.open(fResourceSpansScopeSpans)
	if sg.scope != (sdkinstrumentation.Scope{}) {
		s := e.open(fScopeSpansScope)
		e.string(fScopeName, sg.scope.Name)
		e.string(fScopeVersion, sg.scope.Version)
		e.set(fScopeAttributes, &sg.scope.Attributes)
		e.close(s)
	}
	for _, i := range e.order[sg.at : sg.at+sg.n] {
		e.span(spans[i])
	}
	e.string(fScopeSpansSchemaURL, sg.scope.SchemaURL)
	e.close(ss)
}

func (e *spanEncoder) span(s sdktrace.ReadOnlySpan) {
	m := e.open(fScopeSpansSpans)
	sc, parent := s.SpanContext(), s.Parent()
	tid, sid := sc.TraceID(), sc.SpanID()
	e.bytes(fSpanTraceID, tid[:])
	e.bytes(fSpanSpanID, sid[:])
	e.traceState(fSpanTraceState, sc.TraceState())
	if psid := parent.SpanID(); psid.IsValid() {
		e.bytes(fSpanParentSpanID, psid[:])
	}
	e.string(fSpanName, s.Name())
	e.uint(fSpanKind, uint64(spanKind(s.SpanKind())))
	e.fixed64(fSpanStartTime, unixNano(s.StartTime()))
	e.fixed64(fSpanEndTime, unixNano(s.EndTime()))
	for _, kv := range s.Attributes() {
		e.keyValue(fSpanAttributes, kv)
	}
	e.uint(fSpanDroppedAttributes, uint64(clampUint32(s.DroppedAttributes())))
	events := s.Events()
	for i := range events {
		ev := &events[i]
		m := e.open(fSpanEvents)
		e.fixed64(fEventTime, unixNano(ev.Time))
		e.string(fEventName, ev.Name)
		for _, kv := range ev.Attributes {
			e.keyValue(fEventAttributes, kv)
		}
		e.uint(fEventDroppedAttributes, uint64(clampUint32(ev.DroppedAttributeCount)))
		e.close(m)
	}
	e.uint(fSpanDroppedEvents, uint64(clampUint32(s.DroppedEvents())))
	links := s.Links()
	for i := range links {
		l := &links[i]
		m := e.open(fSpanLinks)
		tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		e.bytes(fLinkTraceID, tid[:])
		e.bytes(fLinkSpanID, sid[:])
		e.traceState(fLinkTraceState, l.SpanContext.TraceState())
		for _, kv := range l.Attributes {
			e.keyValue(fLinkAttributes, kv)
		}
		e.uint(fLinkDroppedAttributes, uint64(clampUint32(l.DroppedAttributeCount)))
		e.fixed32(fLinkFlags, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		e.close(m)
	}
	e.uint(fSpanDroppedLinks, uint64(clampUint32(s.DroppedLinks())))
	// Always present, as OpenTelemetry's exporter sends it, even unset.
	st := s.Status()
	sm := e.open(fSpanStatus)
	e.string(fStatusMessage, st.Description)
	e.uint(fStatusCode, statusCode(st.Code))
	e.close(sm)
	e.fixed32(fSpanFlags, spanFlags(sc.TraceFlags(), parent))
	e.close(m)
}

// set writes the attributes of a resource or scope.
func (e *spanEncoder) set(f protowire.Number, set *attribute.Set) {
	for it := set.Iter(); it.Next(); {
		e.keyValue(f, it.Attribute())
	}
}

func (e *spanEncoder) keyValue(f protowire.Number, kv attribute.KeyValue) {
	m := e.open(f)
	e.string(fKeyValueKey, string(kv.Key))
	e.anyValue(fKeyValueValue, kv.Value)
	e.close(m)
}

// anyValue writes v as OpenTelemetry's exporter does: a slice as an
// array_value of its elements, a map as a kvlist_value, an empty value
// as an AnyValue with nothing set, and a type it does not know as the
// string "INVALID".
func (e *spanEncoder) anyValue(f protowire.Number, v attribute.Value) {
	m := e.open(f)
	switch v.Type() {
	case attribute.EMPTY:
	case attribute.BOOL:
		e.buf = protowire.AppendTag(e.buf, fAnyBool, protowire.VarintType)
		e.buf = protowire.AppendVarint(e.buf, protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		e.buf = protowire.AppendTag(e.buf, fAnyInt, protowire.VarintType)
		e.buf = protowire.AppendVarint(e.buf, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		e.buf = protowire.AppendTag(e.buf, fAnyDouble, protowire.Fixed64Type)
		e.buf = protowire.AppendFixed64(e.buf, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		e.buf = protowire.AppendTag(e.buf, fAnyString, protowire.BytesType)
		e.buf = protowire.AppendString(e.buf, v.AsString())
	case attribute.BYTESLICE:
		e.buf = protowire.AppendTag(e.buf, fAnyBytes, protowire.BytesType)
		e.buf = protowire.AppendBytes(e.buf, v.AsByteSlice())
	case attribute.BOOLSLICE:
		a := e.open(fAnyArray)
		for _, x := range v.AsBoolSlice() {
			e.anyValue(fListValues, attribute.BoolValue(x))
		}
		e.close(a)
	case attribute.INT64SLICE:
		a := e.open(fAnyArray)
		for _, x := range v.AsInt64Slice() {
			e.anyValue(fListValues, attribute.Int64Value(x))
		}
		e.close(a)
	case attribute.FLOAT64SLICE:
		a := e.open(fAnyArray)
		for _, x := range v.AsFloat64Slice() {
			e.anyValue(fListValues, attribute.Float64Value(x))
		}
		e.close(a)
	case attribute.STRINGSLICE:
		a := e.open(fAnyArray)
		for _, x := range v.AsStringSlice() {
			e.anyValue(fListValues, attribute.StringValue(x))
		}
		e.close(a)
	case attribute.SLICE:
		a := e.open(fAnyArray)
		for _, x := range v.AsSlice() {
			e.anyValue(fListValues, x)
		}
		e.close(a)
	case attribute.MAP:
		a := e.open(fAnyKVList)
		for _, kv := range v.AsMap() {
			e.keyValue(fListValues, kv)
		}
		e.close(a)
	default:
		e.buf = protowire.AppendTag(e.buf, fAnyString, protowire.BytesType)
		e.buf = protowire.AppendString(e.buf, "INVALID")
	}
	e.close(m)
}

// traceState writes ts as its String method would, without building the
// string.
func (e *spanEncoder) traceState(f protowire.Number, ts trace.TraceState) {
	if ts.Len() == 0 {
		return
	}
	m := e.open(f)
	first := true
	ts.Walk(func(k, v string) bool {
		if !first {
			e.buf = append(e.buf, ',')
		}
		first = false
		e.buf = append(append(append(e.buf, k...), '='), v...)
		return true
	})
	e.close(m)
}

// open starts a length-delimited field, reserving one byte for its
// length: what most attributes, values and events need.
func (e *spanEncoder) open(f protowire.Number) int {
	e.buf = protowire.AppendTag(e.buf, f, protowire.BytesType)
	e.buf = append(e.buf, 0)
	return len(e.buf)
}

// close ends the field open returned start for, moving its content up
// when its length takes more than the byte reserved.
func (e *spanEncoder) close(start int) {
	n := len(e.buf) - start
	if n < 0x80 {
		e.buf[start-1] = byte(n)
		return
	}
	w := protowire.SizeVarint(uint64(n))
	e.buf = slices.Grow(e.buf, w-1)[:len(e.buf)+w-1]
	copy(e.buf[start+w-1:], e.buf[start:start+n])
	protowire.AppendVarint(e.buf[:start-1], uint64(n))
}

// string writes a string field, omitted when empty as proto3 does.
func (e *spanEncoder) string(f protowire.Number, s string) {
	if s == "" {
		return
	}
	e.buf = protowire.AppendTag(e.buf, f, protowire.BytesType)
	e.buf = protowire.AppendString(e.buf, s)
}

func (e *spanEncoder) bytes(f protowire.Number, b []byte) {
	e.buf = protowire.AppendTag(e.buf, f, protowire.BytesType)
	e.buf = protowire.AppendBytes(e.buf, b)
}

// uint writes a varint field, omitted when zero.
func (e *spanEncoder) uint(f protowire.Number, v uint64) {
	if v == 0 {
		return
	}
	e.buf = protowire.AppendTag(e.buf, f, protowire.VarintType)
	e.buf = protowire.AppendVarint(e.buf, v)
}

func (e *spanEncoder) fixed64(f protowire.Number, v uint64) {
	if v == 0 {
		return
	}
	e.buf = protowire.AppendTag(e.buf, f, protowire.Fixed64Type)
	e.buf = protowire.AppendFixed64(e.buf, v)
}

func (e *spanEncoder) fixed32(f protowire.Number, v uint32) {
	if v == 0 {
		return
	}
	e.buf = protowire.AppendTag(e.buf, f, protowire.Fixed32Type)
	e.buf = protowire.AppendFixed32(e.buf, v)
}

// spanKind maps the SDK's kinds to OTLP's, which have the same values;
// an unknown kind is unspecified.
func spanKind(k trace.SpanKind) int {
	if k < trace.SpanKindInternal || k > trace.SpanKindConsumer {
		return 0
	}
	return int(k)
}

func statusCode(c codes.Code) uint64 {
	switch c {
	case codes.Ok:
		return statusCodeOK
	case codes.Error:
		return statusCodeError
	}
	return 0
}

// spanFlags are the W3C trace flags with whether the parent (of a span)
// or the linked span (of a link) is remote, which is always known.
func spanFlags(tf trace.TraceFlags, sc trace.SpanContext) uint32 {
	f := uint32(tf) | spanFlagsHasIsRemote
	if sc.IsRemote() {
		f |= spanFlagsIsRemote
	}
	return f
}

// unixNano is t in nanoseconds since the epoch, zero before it (or for
// the zero time).
func unixNano(t time.Time) uint64 {
	return uint64(max(0, t.UnixNano()))
}

func clampUint32(v int) uint32 {
	if v < 0 {
		return 0
	}
	if int64(v) > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(v)
}
