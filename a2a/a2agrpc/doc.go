// Package a2agrpc converts between the A2A wire model and its gRPC messages.
//
// It is the gRPC wire layer of A2A v1.0.1: conversions between the wire
// model in package a2a and the generated lf.a2a.v1 messages in package
// a2apb, for every request, response and stream event of the eleven methods,
// and the mapping of *a2a.Error to gRPC statuses and back. The server
// binding and the client transport sit on it; neither the rest of NovaOS nor
// an agent sees a generated type.
//
//	req, err := a2agrpc.SendMessageRequestFromPB(in) // server: pb → model
//	if err != nil {
//		return nil, a2agrpc.Status(a2a.NewError(a2a.CodeInvalidParams, "%v", err)).Err()
//	}
//	resp, err := a2agrpc.SendMessageResponseToPB(result) // model → pb
//	...
//	_, err = client.GetTask(ctx, a2agrpc.GetTaskRequestToPB(q))
//	e := a2agrpc.Error(err) // client: status → *a2a.Error
//
// Reading (FromPB) refuses what the JSON reader refuses at the model
// level, with a *FieldError naming the field: a part with no content
// (a2a.ErrPartContent), a data value or metadata entry with no kind or a
// NaN or infinite number, a timestamp outside years 1 to 9999. One rule
// is stricter than JSON: an enum number outside A2A v1.0.1 is an error
// (ErrEnumValue), where the JSON reader maps an unknown enum name to
// UNSPECIFIED. Writing (ToPB) fails only where the JSON encoders fail (a
// data part that is not JSON, a NaN in metadata) or where protobuf cannot
// carry the value (two members of a oneof, a metadata or data value
// nested deeper than 3,000 levels, which protobuf readers, stopping at
// 10,000 messages, could not read back); strings that are not UTF-8
// get U+FFFD for each bad byte, as the JSON encoders write them.
//
// Where the two models differ in shape:
//   - optional fields keep their presence both ways (history_length,
//     page_size of ListTasks, the card's optional URLs and capability
//     booleans); ListTasks' include_artifacts is a plain bool in the model,
//     so an explicit false is not kept, and ListTaskPushNotificationConfigs'
//     page_size has no presence in the proto, so 0 reads as unset;
//   - ListTasks' status_timestamp_after is a Timestamp on the wire and an
//     RFC 3339 string in the model;
//   - timestamps keep nanoseconds over gRPC, where the JSON encoders write
//     milliseconds;
//   - data parts and metadata are google.protobuf.Value: numbers are
//     float64, so an integer beyond 2^53 loses precision, as in any
//     ProtoJSON reader;
//   - OAuth flows, raw JSON in the model, are the proto's OAuthFlows and
//     read back as its ProtoJSON: members it does not define, and members
//     at their default ("scopes": {}), are dropped;
//   - empty metadata, lists and maps read as nil.
//
// Values are shared, not copied, where both sides can hold them (byte
// slices of raw parts, string lists): treat a converted value as
// read-only while the other is in use.
package a2agrpc
