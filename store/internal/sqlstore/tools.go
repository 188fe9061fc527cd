package sqlstore

import "novaos.dev/novaos/tools"

// The tool gateway's rows in the column layout both SQL stores share
// (their 0013_tools migrations), times in microseconds since the Unix
// epoch.

// ToolSessionCols are the columns of tool_sessions, in ScanToolSession's
// order.
const ToolSessionCols = `id, tenant, subject, protocol_version, created_us, last_seen_us`

// ToolSessionArgs are s's values in ToolSessionCols' order.
func ToolSessionArgs(s *tools.Session) []any {
	return []any{s.ID, s.TenantID, s.Subject, s.ProtocolVersion, Micros(s.CreatedAt), Micros(s.LastSeen)}
}

// ScanToolSession reads a row of ToolSessionCols.
func ScanToolSession(r Scanner) (tools.Session, error) {
	var (
		s             tools.Session
		created, seen int64
	)
	if err := r.Scan(&s.ID, &s.TenantID, &s.Subject, &s.ProtocolVersion, &created, &seen); err != nil {
		return tools.Session{}, err
	}
	s.CreatedAt, s.LastSeen = FromMicros(created), FromMicros(seen)
	return s, nil
}

// ToolPolicyCols are the columns of tool_policies, in ScanToolPolicy's
// order.
const ToolPolicyCols = `tenant, expr, version, updated_us, updated_by`

// ToolPolicyArgs are p's values in ToolPolicyCols' order.
func ToolPolicyArgs(p *tools.Policy) []any {
	return []any{p.TenantID, p.Expr, p.Version, Micros(p.UpdatedAt), p.UpdatedBy}
}

// ScanToolPolicy reads a row of ToolPolicyCols.
func ScanToolPolicy(r Scanner) (tools.Policy, error) {
	var (
		p       tools.Policy
		updated int64
	)
	if err := r.Scan(&p.TenantID, &p.Expr, &p.Version, &updated, &p.UpdatedBy); err != nil {
		return tools.Policy{}, err
	}
	p.UpdatedAt = FromMicros(updated)
	return p, nil
}
