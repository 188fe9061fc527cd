package builtin

import (
	"strings"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/hitl"
	"novaos.dev/novaos/agent"
)

// askQuestion is what the ask agent asks before it answers.
const askQuestion = "What should I call you?"

// Ask returns the ask agent, the smallest human in the loop: its one
// skill, "ask", pauses a new task in INPUT_REQUIRED with a HITL input
// request asking what to call the caller, and completes the task when
// it is answered, greeting the caller by that name and repeating what
// they first asked.
func Ask() *agent.Agent {
	a := agent.New("ask", Version, &agent.Options{
		Description: "Asks what to call you, then answers: a human-in-the-loop example.",
		// A reply carries the HITL response as a JSON data part.
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/plain"},
	})
	a.MustRegister(agent.Skill{
		ID:          "ask",
		Name:        "Ask",
		Description: "Asks the caller's name, then greets them.",
		Tags:        []string{"hitl", "example"},
		Examples:    []string{"book a table for two"},
		Handler:     ask,
	})
	return a
}

func ask(c *agent.Context) (agent.Result, error) {
	task := c.Request().Task
	if task == nil || task.Status.State != a2a.TaskStateInputRequired {
		return agent.Result{Status: agent.StatusWaitingUser, Output: []a2a.Part{a2a.TextPart(askQuestion),
			hitl.Part(hitl.InputRequest(askQuestion, hitl.InputText, nil, c.ContextID()))}}, nil
	}
	name := strings.TrimSpace(c.Input())
	if f := hitl.Extract(c.Message()); f.Response != nil && f.Response.InputValue != nil {
		name = strings.TrimSpace(*f.Response.InputValue)
	}
	first := ""
	if len(task.History) > 0 {
		first = task.History[0].Text()
	}
	return agent.Result{Output: "Hello, " + name + "! You asked: " + first}, nil
}
