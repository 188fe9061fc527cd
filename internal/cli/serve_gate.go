package cli

import (
	"flag"
	"strings"
	"time"

	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/gatesvc"
	"novaos.dev/novaos/internal/gatesvc/judge"
	"novaos.dev/novaos/internal/gatesvc/rules"
	"novaos.dev/novaos/internal/llmgw"
)

// gateFlagSet holds serve's flags for the governance gate.
type gateFlagSet struct {
	holdWindow, restartGrace, claimTimeout, maxWait *time.Duration
	holdIndefinite                                  *bool
	maxBody                                         byteSize
	commitment                                      *string
	costLimit                                       *uint64
	judgeURL, judgeModel, judgeKey                  *string
	judgeTimeout                                    *time.Duration
}

func gateFlags(fs *flag.FlagSet) *gateFlagSet {
	g := &gateFlagSet{maxBody: byteSize{n: gatesvc.DefaultMaxBodyBytes}}
	g.holdWindow = fs.Duration("gate-hold-window", gatesvc.DefaultHoldWindow, "gate: the deployment's hold window, the longest a held write waits for an operator before it fails closed (a session's max_hold_s can only shorten it)")
	g.holdIndefinite = fs.Bool("gate-hold-indefinite", false, "gate: holds wait until a person decides (no window), and resumable sessions that adopt the deployment window park instead of blocking")
	g.restartGrace = fs.Duration("gate-restart-grace", gatesvc.DefaultRestartGrace, "gate: how long the server may be down with holds pending and keep them; a restart after longer fails them closed")
	g.claimTimeout = fs.Duration("gate-claim-timeout", gatesvc.DefaultClaimTimeout, "gate: how long a claimed write may go unacknowledged before operators see it as unconfirmed")
	g.maxWait = fs.Duration("gate-max-wait", gatesvc.DefaultMaxWait, "gate: longest one long-poll for a hold's decision is held open (the SDK asks again)")
	fs.Var(&g.maxBody, "gate-max-body-bytes", "gate: largest request body `size` (an action with its evidence); a larger one gets 413")
	g.commitment = fs.String("gate-commitment-version", gatesvc.DefaultCommitmentVersion, "gate: what a commitment means in this deployment; changing it voids standing approvals (resumes get [resume_commitment_version_changed])")
	g.costLimit = fs.Uint64("gate-rule-cost-limit", rules.DefaultCostLimit, "gate: CEL cost units one rule may spend on one write; past it the rule fails closed")
	g.judgeURL = fs.String("gate-judge-url", "", "gate: base `URL` of an OpenAI-compatible chat completions API for the LLM judge (after the rules), or "+gatewayURL+": the platform's LLM gateway; default: rules only")
	g.judgeModel = fs.String("gate-judge-model", "", "gate: judge `model` name (with --gate-judge-url)")
	g.judgeKey = fs.String("gate-judge-key-file", "", "gate: `file` holding the judge API key (owner-only)")
	g.judgeTimeout = fs.Duration("gate-judge-timeout", judge.DefaultTimeout, "gate: time one judgement may take, retries included; past it the write fails closed [fail_closed_judge_timeout]")
	return g
}

// check reports a flag combination that cannot work.
func (g *gateFlagSet) check() string {
	switch {
	case *g.holdWindow <= 0 || *g.restartGrace <= 0 || *g.claimTimeout <= 0 || *g.maxWait <= 0 || *g.judgeTimeout <= 0:
		return "--gate-hold-window, --gate-restart-grace, --gate-claim-timeout, --gate-max-wait and --gate-judge-timeout must be positive"
	case g.maxBody.n <= 0:
		return "--gate-max-body-bytes must be positive"
	case *g.commitment == "":
		return "--gate-commitment-version must not be empty"
	case *g.costLimit == 0:
		return "--gate-rule-cost-limit must be positive"
	case (*g.judgeURL == "") != (*g.judgeModel == ""):
		return "--gate-judge-url and --gate-judge-model go together"
	case *g.judgeURL != "" && *g.judgeURL != gatewayURL && !strings.HasPrefix(*g.judgeURL, "http://") && !strings.HasPrefix(*g.judgeURL, "https://"):
		return "--gate-judge-url must be an http:// or https:// URL, or " + gatewayURL
	case *g.judgeURL == gatewayURL && *g.judgeKey != "":
		return "--gate-judge-key-file is for a model API; the LLM gateway keeps its providers' keys"
	}
	return ""
}

// options builds the gate's options, reading the judge's API key; a judge
// URL of gatewayURL calls the LLM gateway through platform.
func (g *gateFlagSet) options(platform *llmgw.Platform) (app.GateOptions, error) {
	o := app.GateOptions{MaxBodyBytes: g.maxBody.n,
		HoldWindow: *g.holdWindow, HoldIndefinite: *g.holdIndefinite, RestartGrace: *g.restartGrace,
		ClaimTimeout: *g.claimTimeout, MaxWait: *g.maxWait, CommitmentVersion: *g.commitment,
		Rules: &rules.Options{CostLimit: *g.costLimit},
	}
	if *g.judgeURL != "" {
		url, key, mo, err := modelClient(*g.judgeURL, *g.judgeKey, "--gate-judge-key-file", *g.judgeTimeout, platform)
		if err != nil {
			return o, err
		}
		o.Judge = judge.New(url, *g.judgeModel, key, &judge.Options{Timeout: *g.judgeTimeout, Model: &mo})
		o.JudgeModel = *g.judgeModel
	}
	return o, nil
}
