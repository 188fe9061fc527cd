// Package files serves novaos.files.*, tenant-scoped file storage with quotas, behind the tool gateway.
//
// A Provider offers four tools over a tools.FileStore:
//
//	novaos.files.write  {path, content, encoding?, content_type?, scope?, if_version?} → {path, version, size, sha256}
//	novaos.files.read   {path, scope?}                    → {path, content, encoding, content_type, version, size, sha256}
//	novaos.files.list   {prefix?, scope?, cursor?, limit?} → {files: [{path, size, version, content_type, updated_at}], next_cursor}
//	novaos.files.delete {path, scope?, if_version?}       → {deleted: true}
//
// Areas. scope "agent" (the default) is the calling agent's own area,
// keyed by the agent id of its token; scope "tenant" is the tenant's
// shared area. Reads need files:read:<area>, writes and deletes
// files:write:<area>. Each tool's Tool.Scopes name the agent area's
// scope, which the gateway checks (and filters tools/list by); the
// provider checks the area's scope of every call again, so a call in
// the shared area needs files:read:tenant or files:write:tenant as
// well. A token without an agent has only the shared area.
//
// Content. Files live in the database with their records (see
// tools.FileStore), each at most Options.MaxFileBytes (10 MiB by
// default). A write sends text, or base64 with encoding "base64"; a read
// answers text when the content is valid UTF-8 and its type is text/*
// or JSON, base64 otherwise. Without content_type, text is stored as
// text/plain; charset=utf-8 and base64 content as what it sniffs as.
//
// Quotas. A tenant keeps at most Options.TenantQuotaBytes (1 GiB) in at
// most Options.TenantMaxFiles (10,000) files over all its areas; the
// store checks them in the put's own transaction, so concurrent writes on
// any replica never pass them. Only growth is refused: a tenant over a
// lowered quota can still shrink, replace at equal size and delete.
//
// Versions. Every write gives the file the tenant's next version.
// if_version makes a write (0: "only if absent") or a delete
// conditional: a compare-and-set for agents that read, change and write
// back.
//
// Failures a caller can mend answer a result with IsError and a reason:
// tools.ReasonInvalidArguments, ReasonFileNotFound,
// ReasonVersionConflict, ReasonQuotaExceeded, ReasonFileTooLarge. A
// missing area scope is a *toolgw.Error with
// tools.ReasonInsufficientScope; a provider without a store answers
// tools.ReasonServiceDisabled, a failing store tools.ReasonUnavailable
// (its detail is logged, not sent).
//
//	p, err := files.New(stores.Files, &files.Options{TenantQuotaBytes: 256 << 20})
//	// register p with the gateway's providers
package files
