package sqlstore

import (
	"encoding/json"
	"fmt"
	"time"

	"novaos.dev/novaos/tools"
)

// The upstream MCP servers of the tool gateway in the column layout both
// SQL stores share (their 0014_tool_servers migrations): the key, the
// version and the times are columns, the sealed credentials a byte column
// stored as given, and the rest of a registration its JSON encoding in
// body, so a field the registration gains needs no migration.

// ToolServerCols are the columns of tool_servers, in ScanToolServer's
// order.
const ToolServerCols = `tenant, name, version, created_us, updated_us, sealed_credentials, body`

// ToolServerArgs are s's values in ToolServerCols' order.
func ToolServerArgs(s *tools.UpstreamServer) ([]any, error) {
	b := *s
	b.TenantID, b.Name, b.Version, b.SealedCredentials = "", "", 0, nil
	b.CreatedAt, b.UpdatedAt = time.Time{}, time.Time{}
	body, err := json.Marshal(&b)
	if err != nil {
		return nil, fmt.Errorf("encode tool server %s: %w", s.Name, err)
	}
	return []any{s.TenantID, s.Name, s.Version, Micros(s.CreatedAt), Micros(s.UpdatedAt), Raw(s.SealedCredentials), body}, nil
}

// ScanToolServer reads a row of ToolServerCols.
func ScanToolServer(r Scanner) (tools.UpstreamServer, error) {
	var (
		s             tools.UpstreamServer
		tenant, name  string
		version, c, u int64
		sealed, body  []byte
	)
	if err := r.Scan(&tenant, &name, &version, &c, &u, &sealed, &body); err != nil {
		return tools.UpstreamServer{}, err
	}
	if err := json.Unmarshal(body, &s); err != nil {
		return tools.UpstreamServer{}, fmt.Errorf("decode tool server %s: %w", name, err)
	}
	s.TenantID, s.Name, s.Version = tenant, name, version
	s.CreatedAt, s.UpdatedAt, s.SealedCredentials = FromMicros(c), FromMicros(u), Raw(sealed)
	return s, nil
}
