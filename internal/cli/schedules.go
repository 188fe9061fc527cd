package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"novaos.dev/novaos/heartbeat"
)

// maxTaskFile bounds what --task-file reads.
const maxTaskFile = 1 << 20

var schedulesCommands = []command{
	{"create", "schedule runs of an instance: schedules create INSTANCE --cron EXPR --task TEXT --image REF --image-tag TAG --max-daily-runs N [flags]", runSchedulesCreate},
	{"list", "an instance's heartbeat config, its next and last run: schedules list INSTANCE", runSchedulesList},
	{"pause", "stop an instance's schedule (nothing changes if it is paused): schedules pause INSTANCE [CONFIG]", runSchedulesPause},
	{"resume", "start a paused schedule again from its next tick: schedules resume INSTANCE [CONFIG]", runSchedulesResume},
	{"delete", "remove an instance's heartbeat config: schedules delete INSTANCE [CONFIG]", runSchedulesDelete},
}

func runSchedules(ctx context.Context, args []string, e *env) int {
	return runSubcommand(ctx, "schedules", schedulesCommands, args, e)
}

// schedFlags are the flags every schedules command has: the gateway
// commands' and --agent.
type schedFlags struct {
	*gwFlags
	agent *string
}

func newSchedFlags(name, synopsis string, e *env) *schedFlags {
	g := newGWFlags(name, synopsis+" [--agent ID]", e)
	return &schedFlags{gwFlags: g, agent: g.fs.String("agent", "",
		"the `id` of the agent the instance runs (its hosted agent's name or registry id); default: read from the instance, which needs instances:read")}
}

// target resolves INSTANCE (an id or a name) to its id and agent, and
// returns a heartbeat client with the same credentials.
func (f *schedFlags) target(ctx context.Context, ref string) (hb *heartbeat.Client, agent, instance string, code int, ok bool) {
	tok, code, ok := f.credentials()
	if !ok {
		return nil, "", "", code, false
	}
	hb, err := heartbeat.New(*f.server, tok, &heartbeat.Options{Tenant: *f.tenant})
	if err != nil {
		fmt.Fprintf(f.e.stderr, "novaos %s: %v\n", f.fs.Name(), err)
		return nil, "", "", exitFail, false
	}
	if *f.agent != "" && isUUID(ref) {
		return hb, *f.agent, ref, 0, true
	}
	gw, code, ok := f.client()
	if !ok {
		return nil, "", "", code, false
	}
	id, err := resolveInstance(ctx, gw, ref)
	if err != nil {
		return nil, "", "", f.fail(err), false
	}
	agent = *f.agent
	if agent == "" {
		inst, err := gw.GetInstance(ctx, id)
		if err != nil {
			return nil, "", "", f.fail(err), false
		}
		agent = inst.AgentID
		if agent == "" {
			agent = inst.Hosted
		}
	}
	return hb, agent, id, 0, true
}

// failSchedule reports a heartbeat call's error: a refusal as its status
// and the server's detail, each field it names on a line of its own.
func (f *schedFlags) failSchedule(err error) int {
	var he *heartbeat.Error
	var ie *heartbeat.InvalidError
	switch {
	case errors.As(err, &he):
		msg := fmt.Sprintf("%d %s", he.Status, he.Title)
		if he.Detail != "" {
			msg += ": " + he.Detail
		}
		switch he.Status {
		case http.StatusUnauthorized:
			msg += " (check the token: --token-file, $" + EnvToken + ", --admin-token-file or $" + EnvAdminToken + ")"
		case http.StatusForbidden:
			msg += " (schedules need a token with schedules:read or schedules:write)"
		}
		fmt.Fprintf(f.e.stderr, "novaos %s: %s\n", f.fs.Name(), msg)
		for _, fe := range he.Errors {
			fmt.Fprintf(f.e.stderr, "  %s: %s\n", fe.Field, fe.Message)
		}
	case errors.As(err, &ie):
		fmt.Fprintf(f.e.stderr, "novaos %s: invalid %s: %s\n", f.fs.Name(), ie.Field, ie.Message)
	default:
		fmt.Fprintf(f.e.stderr, "novaos %s: %s\n", f.fs.Name(), strings.ReplaceAll(err.Error(), "heartbeat: ", ""))
	}
	return exitFail
}

func runSchedulesCreate(ctx context.Context, args []string, e *env) int {
	f := newSchedFlags("schedules create", "INSTANCE --cron EXPR [--timezone TZ] (--task TEXT | --task-file FILE) --image REF --image-tag TAG --max-daily-runs N [--max-daily-tokens N] [--max-daily-cost USD]", e)
	fs := f.fs
	cronExpr := fs.String("cron", "", "the five-field cron `expression` of the runs (such as \"0 * * * *\", or @hourly)")
	zone := fs.String("timezone", "", "the IANA time `zone` the expression is read in (default UTC)")
	task := fs.String("task", "", "the `text` every run gets as its input")
	taskFile := fs.String("task-file", "", "read the task's text from `file`")
	image := fs.String("image", "", "the OCI image `reference` the agent is built from (kept and shown; the platform runs the instance as installed)")
	tag := fs.String("image-tag", "", "the image's `tag`")
	runs := fs.Int("max-daily-runs", 0, "the most runs a day, from 1 to 1440 (required)")
	tokens := fs.Int64("max-daily-tokens", 0, "the most model tokens the day's runs may use (0: no cap of its own)")
	cost := fs.Float64("max-daily-cost", 0, "the most the day's runs may cost, in `USD` (0: no cap of its own)")
	pos, code, ok := f.parse(args, 1, 1, "the instance's id or name")
	if !ok {
		return code
	}
	switch {
	case *cronExpr == "":
		return usageError(fs, "--cron is required")
	case (*task == "") == (*taskFile == ""):
		return usageError(fs, "give exactly one of --task and --task-file")
	case *image == "" || *tag == "":
		return usageError(fs, "--image and --image-tag are required")
	case *runs <= 0:
		return usageError(fs, "--max-daily-runs is required: a schedule has a daily budget")
	}
	text := *task
	if *taskFile != "" {
		b, err := readLimited(*taskFile, maxTaskFile)
		if err != nil {
			return usageError(fs, "--task-file: %v", err)
		}
		text = strings.TrimSuffix(string(b), "\n")
	}
	hb, agent, inst, code, ok := f.target(ctx, pos[0])
	if !ok {
		return code
	}
	created, err := hb.CreateConfig(ctx, agent, inst, heartbeat.CreateRequest{CronExpression: *cronExpr, Timezone: *zone,
		TaskContent: text, AgentImage: *image, AgentImageTag: *tag,
		Budget: &heartbeat.Budget{MaxDailyRuns: *runs, MaxDailyTokens: *tokens, MaxDailyCostUSD: *cost}})
	if err != nil {
		return f.failSchedule(err)
	}
	if *f.json {
		printJSON(e.stdout, created)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "created heartbeat config %s for instance %s\n", created.ConfigID, pos[0])
	if list, err := hb.ListConfigs(ctx, agent, inst); err == nil && len(list) == 1 {
		s := list[0].Schedules[0]
		fmt.Fprintf(e.stdout, "next run %s\n", showTime(s.NextRunAt, s.Timezone))
	}
	return exitOK
}

func runSchedulesList(ctx context.Context, args []string, e *env) int {
	f := newSchedFlags("schedules list", "INSTANCE", e)
	pos, code, ok := f.parse(args, 1, 1, "the instance's id or name")
	if !ok {
		return code
	}
	hb, agent, inst, code, ok := f.target(ctx, pos[0])
	if !ok {
		return code
	}
	list, err := hb.ListConfigs(ctx, agent, inst)
	if err != nil {
		return f.failSchedule(err)
	}
	if *f.json {
		printJSON(e.stdout, heartbeat.ConfigList{Configs: list})
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONFIG\tSTATUS\tCRON\tTIMEZONE\tNEXT RUN\tLAST RUN\tLAST TICK\tMISSED")
	for _, c := range list {
		for _, s := range c.Schedules {
			last, missed := "-", "-"
			if lf := s.LastFire; lf != nil {
				last = string(lf.Outcome)
				if lf.Reason != "" {
					last += ": " + clipLine(lf.Reason, 60)
				}
			}
			if m := s.Missed; m != nil {
				missed = fmt.Sprintf("%d (last gap %d: %s to %s)", m.Total, m.Count, showTime(&m.From, s.Timezone), showTime(&m.To, s.Timezone))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.ConfigID, s.Status, s.CronExpression, s.Timezone,
				showTime(s.NextRunAt, s.Timezone), showTime(s.LastRunAt, s.Timezone), last, missed)
		}
	}
	tw.Flush()
	return exitOK
}

// showTime shows a time of a schedule in its zone ("-" for none).
func showTime(t *time.Time, zone string) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	if loc, err := time.LoadLocation(zone); err == nil && zone != "" {
		return t.In(loc).Format("2006-01-02 15:04 MST")
	}
	return t.UTC().Format("2006-01-02 15:04 MST")
}

func runSchedulesPause(ctx context.Context, args []string, e *env) int {
	return setSchedule(ctx, args, e, "pause")
}

func runSchedulesResume(ctx context.Context, args []string, e *env) int {
	return setSchedule(ctx, args, e, "resume")
}

func runSchedulesDelete(ctx context.Context, args []string, e *env) int {
	return setSchedule(ctx, args, e, "delete")
}

// setSchedule pauses, resumes or deletes the instance's config (the one
// CONFIG names, or its only one).
func setSchedule(ctx context.Context, args []string, e *env, action string) int {
	f := newSchedFlags("schedules "+action, "INSTANCE [CONFIG]", e)
	pos, code, ok := f.parse(args, 1, 2, "the instance's id or name, and optionally its config's id")
	if !ok {
		return code
	}
	hb, agent, inst, code, ok := f.target(ctx, pos[0])
	if !ok {
		return code
	}
	var id string
	if len(pos) == 2 {
		id = pos[1]
	} else {
		list, err := hb.ListConfigs(ctx, agent, inst)
		if err != nil {
			return f.failSchedule(err)
		}
		if len(list) == 0 {
			fmt.Fprintf(e.stderr, "novaos %s: instance %s has no heartbeat config\n", f.fs.Name(), pos[0])
			return exitFail
		}
		id = list[0].ConfigID
	}
	if action == "delete" {
		if err := hb.DeleteConfig(ctx, agent, inst, id); err != nil {
			return f.failSchedule(err)
		}
		if *f.json {
			printJSON(e.stdout, heartbeat.ConfigStatus{ConfigID: id, InstanceID: inst})
			return exitOK
		}
		fmt.Fprintf(e.stdout, "deleted heartbeat config %s\n", id)
		return exitOK
	}
	set := hb.PauseConfig
	if action == "resume" {
		set = hb.ResumeConfig
	}
	st, err := set(ctx, agent, inst, id)
	if err != nil {
		return f.failSchedule(err)
	}
	if *f.json {
		printJSON(e.stdout, st)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "heartbeat config %s is %s\n", st.ConfigID, st.Status)
	return exitOK
}
