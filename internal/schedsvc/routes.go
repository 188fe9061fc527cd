package schedsvc

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/heartbeat/cron"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/problem"
)

// Scopes a platform token needs.
const (
	ScopeRead  = "schedules:read"  // list and read configs
	ScopeWrite = "schedules:write" // create, pause, resume and delete them
)

// configPath names a config by the path it was asked for under.
type configPath struct {
	agentID, instanceID, configID string
}

func pathOf(r *http.Request) configPath {
	return configPath{r.PathValue("agentId"), r.PathValue("instanceId"), r.PathValue("configId")}
}

// caller authenticates a request and checks its scope.
func (s *Service) caller(r *http.Request, scope string) (httpapi.TenantCaller, error) {
	c, err := httpapi.TenantCallerOf(r, true)
	if err == nil {
		err = c.Need(scope)
	}
	return c, err
}

func (s *Service) serveCreate(w http.ResponseWriter, r *http.Request) {
	c, err := s.caller(r, ScopeWrite)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	p := pathOf(r)
	var in heartbeat.CreateRequest
	if !s.api.Decode(w, r, &in, httpapi.Body{What: "the heartbeat config"}) {
		return
	}
	now := s.clock.Now()
	plan, errs := planCreate(&in, &p, now)
	if len(errs) > 0 {
		s.api.Fail(w, r, invalid(errs))
		return
	}
	if !heartbeat.ValidID(p.agentID) || !heartbeat.ValidID(p.instanceID) {
		s.api.Fail(w, r, instanceNotFound(p))
		return
	}
	inst, err := s.deps.Runs.Instance(r.Context(), c.Tenant, p.instanceID)
	switch {
	case errors.Is(err, gateway.ErrNotFound):
		s.api.Fail(w, r, instanceNotFound(p))
		return
	case err != nil:
		s.api.Fail(w, r, err)
		return
	case agentOf(&inst) != p.agentID:
		s.api.Fail(w, r, instanceNotFound(p))
		return
	}
	creator := heartbeat.Creator{Subject: c.Subject, Service: c.Admin}
	if c.Claims != nil {
		creator.UserID = c.Claims.UserID
		creator.Service = c.Claims.UserID == ""
	}
	rec := heartbeat.Record{
		ID: a2a.NewID(), TenantID: c.Tenant, AgentID: p.agentID, InstanceID: p.instanceID, Status: heartbeat.StatusActive,
		CronExpression: strings.TrimSpace(in.CronExpression), Timezone: plan.zone, TaskContent: in.TaskContent,
		AgentImage: in.AgentImage, AgentImageTag: in.AgentImageTag, Budget: *in.Budget, Creator: creator,
		NextRunAt: plan.next, CreatedAt: now,
	}
	stored, err := s.store.Create(r.Context(), rec)
	if errors.Is(err, heartbeat.ErrExists) {
		err = s.exists(r, c.Tenant, p)
	}
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "schedules: heartbeat config created", "tenant_id", stored.TenantID, "config_id", stored.ID,
		"instance_id", stored.InstanceID, "cron", stored.CronExpression, "timezone", stored.Timezone,
		"next_run_at", stored.NextRunAt, "caller", c.Subject)
	s.changed()
	httpapi.WriteJSON(w, r, http.StatusCreated, heartbeat.ConfigCreated{ConfigID: stored.ID, InstanceID: stored.InstanceID,
		Status: stored.Status, TemporalScheduleID: heartbeat.ScheduleID(stored.ID)})
}

// exists is the 409 of a create that found a config of the instance.
func (s *Service) exists(r *http.Request, tenant string, p configPath) error {
	detail := "instance " + quote(p.instanceID) + " has a heartbeat config already; pause, resume or delete it"
	if list, err := s.store.List(r.Context(), tenant, p.instanceID); err == nil && len(list) > 0 {
		detail = "instance " + quote(p.instanceID) + " has heartbeat config " + list[0].ID + " already; pause, resume or delete it"
	}
	return &problem.Problem{Type: heartbeat.ProblemConfigExists, Status: http.StatusConflict, Title: "Conflict", Detail: detail}
}

// plan is what a create works out before it stores anything.
type plan struct {
	zone string
	next time.Time
}

// planCreate checks a create against every rule, naming each field that
// breaks one, and works out its first run.
func planCreate(in *heartbeat.CreateRequest, p *configPath, now time.Time) (plan, []problem.FieldError) {
	var errs []problem.FieldError
	for _, fe := range in.Problems() {
		errs = append(errs, problem.FieldError{Field: fe.Field, Message: fe.Message})
	}
	bad := func(field, msg string) { errs = append(errs, problem.FieldError{Field: field, Message: msg}) }
	if in.AgentID != "" && in.AgentID != p.agentID {
		bad("agent_id", "differs from the path's")
	}
	if in.InstanceID != "" && in.InstanceID != p.instanceID {
		bad("instance_id", "differs from the path's")
	}
	var pl plan
	pl.zone = in.Timezone
	if pl.zone == "" {
		pl.zone = heartbeat.DefaultTimezone
	}
	var (
		loc     *time.Location
		zoneErr = errors.New("the time zone is refused above")
	)
	if len(pl.zone) <= heartbeat.MaxTimezoneLen && heartbeat.Text(pl.zone) {
		if loc, zoneErr = loadZone(pl.zone); zoneErr != nil {
			bad("timezone", zoneErr.Error())
		}
	}
	sched, cronErr := cron.Parse(in.CronExpression)
	var ce *cron.Error
	if errors.As(cronErr, &ce) && strings.TrimSpace(in.CronExpression) != "" && len(in.CronExpression) <= heartbeat.MaxCronBytes {
		msg := ce.Msg
		if ce.Field != "" {
			msg = ce.Field + ": " + msg
		}
		bad("cron_expression", msg)
	}
	if cronErr == nil && zoneErr == nil {
		next, ok := sched.Next(now, loc)
		if !ok {
			bad("cron_expression", "does not fire within "+strconv.Itoa(cron.MaxYears)+" years")
		}
		pl.next = next
	}
	return pl, errs
}

func (s *Service) serveList(w http.ResponseWriter, r *http.Request) {
	c, err := s.caller(r, ScopeRead)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	p := pathOf(r)
	out := heartbeat.ConfigList{Configs: []heartbeat.Config{}}
	if !heartbeat.ValidID(p.instanceID) {
		httpapi.WriteJSON(w, r, http.StatusOK, out)
		return
	}
	list, err := s.store.List(r.Context(), c.Tenant, p.instanceID)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	for i := range list {
		if list[i].AgentID != p.agentID {
			continue
		}
		cfg, err := s.view(r, &list[i])
		if err != nil {
			s.api.Fail(w, r, err)
			return
		}
		out.Configs = append(out.Configs, cfg)
	}
	httpapi.WriteJSON(w, r, http.StatusOK, out)
}

// view is a config as the API shows it, with its latest fire.
func (s *Service) view(r *http.Request, rec *heartbeat.Record) (heartbeat.Config, error) {
	fires, err := s.store.Fires(r.Context(), rec.TenantID, rec.ID, heartbeat.FireFilter{Newest: true, Limit: 1})
	if err != nil {
		return heartbeat.Config{}, err
	}
	var last *heartbeat.Fire
	if len(fires) > 0 {
		last = &fires[0]
	}
	return rec.Config(last), nil
}

// config reads the config a path names, refusing one under another
// instance or agent as not found.
func (s *Service) config(r *http.Request, tenant string, p configPath) (heartbeat.Record, error) {
	if !heartbeat.ValidID(p.configID) {
		return heartbeat.Record{}, configNotFound(p)
	}
	rec, err := s.store.Get(r.Context(), tenant, p.configID)
	if errors.Is(err, heartbeat.ErrNotFound) || err == nil && (rec.InstanceID != p.instanceID || rec.AgentID != p.agentID) {
		return heartbeat.Record{}, configNotFound(p)
	}
	return rec, err
}

func (s *Service) serveGet(w http.ResponseWriter, r *http.Request) {
	c, err := s.caller(r, ScopeRead)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	rec, err := s.config(r, c.Tenant, pathOf(r))
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	cfg, err := s.view(r, &rec)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, r, http.StatusOK, cfg)
}

func (s *Service) servePause(w http.ResponseWriter, r *http.Request) {
	s.setStatus(w, r, heartbeat.StatusPaused)
}

func (s *Service) serveResume(w http.ResponseWriter, r *http.Request) {
	s.setStatus(w, r, heartbeat.StatusActive)
}

// setStatus pauses or resumes a config; one already so is left as it is
// and answered the same. A resumed config fires from its next tick on:
// the ticks of the pause are neither run nor reported missed.
func (s *Service) setStatus(w http.ResponseWriter, r *http.Request, st heartbeat.Status) {
	c, err := s.caller(r, ScopeWrite)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	p := pathOf(r)
	rec, err := s.config(r, c.Tenant, p)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	var next time.Time
	if st == heartbeat.StatusActive && rec.Status != st {
		sched, loc, err := parseRecord(&rec)
		if err != nil {
			s.api.Fail(w, r, err)
			return
		}
		n, ok := sched.Next(s.clock.Now(), loc)
		if !ok {
			s.api.Fail(w, r, &problem.Problem{Type: heartbeat.ProblemInvalidRequest, Status: http.StatusConflict, Title: "Conflict",
				Detail: "the schedule does not fire within " + strconv.Itoa(cron.MaxYears) + " years"})
			return
		}
		next = n
	}
	if rec.Status != st {
		var changed bool
		rec, changed, err = s.store.SetStatus(r.Context(), c.Tenant, rec.ID, st, next, s.clock.Now())
		if errors.Is(err, heartbeat.ErrNotFound) {
			err = configNotFound(p)
		}
		if err != nil {
			s.api.Fail(w, r, err)
			return
		}
		if changed {
			s.log.InfoContext(r.Context(), "schedules: heartbeat config "+string(st), "tenant_id", rec.TenantID, "config_id", rec.ID,
				"next_run_at", rec.NextRunAt, "caller", c.Subject)
			s.changed()
		}
	}
	httpapi.WriteJSON(w, r, http.StatusOK, heartbeat.ConfigStatus{ConfigID: rec.ID, InstanceID: rec.InstanceID, Status: rec.Status})
}

func (s *Service) serveDelete(w http.ResponseWriter, r *http.Request) {
	c, err := s.caller(r, ScopeWrite)
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	p := pathOf(r)
	rec, err := s.config(r, c.Tenant, p)
	if err == nil {
		err = s.store.Delete(r.Context(), c.Tenant, rec.ID)
	}
	if errors.Is(err, heartbeat.ErrNotFound) {
		err = configNotFound(p)
	}
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "schedules: heartbeat config deleted", "tenant_id", rec.TenantID, "config_id", rec.ID, "caller", c.Subject)
	s.changed()
	w.WriteHeader(http.StatusNoContent)
}

// parseRecord reads a stored config's schedule and zone.
func parseRecord(rec *heartbeat.Record) (*cron.Schedule, *time.Location, error) {
	sched, err := cron.Parse(rec.CronExpression)
	if err != nil {
		return nil, nil, err
	}
	loc, err := loadZone(rec.Timezone)
	if err != nil {
		return nil, nil, err
	}
	return sched, loc, nil
}

// agentOf is the agent an instance runs: its registry record, or the
// hosted agent's name.
func agentOf(inst *gateway.Instance) string {
	if inst.AgentID != "" {
		return inst.AgentID
	}
	return inst.Hosted
}

func invalid(errs []problem.FieldError) error {
	return &problem.Problem{Type: heartbeat.ProblemInvalidRequest, Status: http.StatusBadRequest, Title: "Bad Request",
		Detail: "the heartbeat config breaks " + strconv.Itoa(len(errs)) + " rule(s)", Errors: errs}
}

func instanceNotFound(p configPath) error {
	return &problem.Problem{Type: heartbeat.ProblemInstanceNotFound, Status: http.StatusNotFound, Title: "Not Found",
		Detail: "no instance " + quote(p.instanceID) + " of agent " + quote(p.agentID) + " in the tenant"}
}

func configNotFound(p configPath) error {
	return &problem.Problem{Type: heartbeat.ProblemConfigNotFound, Status: http.StatusNotFound, Title: "Not Found",
		Detail: "no heartbeat config " + quote(p.configID) + " of instance " + quote(p.instanceID) + " in the tenant"}
}

// problemFor maps the store's errors that reach a handler.
func problemFor(err error) *problem.Problem {
	switch {
	case errors.Is(err, heartbeat.ErrInvalid):
		return &problem.Problem{Type: heartbeat.ProblemInvalidRequest, Status: http.StatusBadRequest, Title: "Bad Request",
			Detail: "the heartbeat config cannot be stored: it holds text no store keeps"}
	case errors.Is(err, cron.ErrInvalid):
		return &problem.Problem{Type: heartbeat.ProblemInvalidRequest, Status: http.StatusConflict, Title: "Conflict",
			Detail: "the stored schedule no longer parses: " + err.Error()}
	}
	return nil
}

// quote shows an id from a request in a message, bounded.
func quote(id string) string {
	const most = 80
	if len(id) > most {
		id = id[:most] + "…"
	}
	return strconv.Quote(id)
}
