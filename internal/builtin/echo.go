package builtin

import (
	"strconv"
	"unicode"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/agent"
)

// Version is the version the built-in agents publish on their cards.
const Version = "1.0.0"

// Echo returns the echo agent. Its one skill, "echo", completes with the
// caller's text in its result artifact, once: the final status message says
// how much was echoed rather than repeating it, so a large message costs
// one copy in the answer besides the caller's own. When the caller streams,
// the text arrives as one artifact sent word by word (append, then
// lastChunk on the final word) before the task completes.
func Echo() *agent.Agent {
	a := agent.New("echo", Version, &agent.Options{
		Description:        "Answers with the text it receives; streams it word by word.",
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
	})
	a.MustRegister(agent.Skill{
		ID:          "echo",
		Name:        "Echo",
		Description: "Replies with the message's text.",
		Tags:        []string{"echo", "test"},
		Examples:    []string{"hello world"},
		Handler:     echo,
	})
	return a
}

func echo(c *agent.Context) (agent.Result, error) {
	text := c.Input()
	words := splitWords(text)
	if !c.Streaming() || len(words) < 2 {
		return agent.Result{Output: text, Message: echoed(len(text))}, nil
	}
	u := c.Updater()
	id := a2a.NewID()
	for i, w := range words {
		art := a2a.Artifact{ArtifactID: id, Name: "echo", Parts: []a2a.Part{a2a.TextPart(w)}}
		if err := u.AppendArtifact(c, art, i == len(words)-1); err != nil {
			return agent.Result{}, err
		}
	}
	return agent.Result{Message: echoed(len(text))}, nil
}

func echoed(n int) string { return "echoed " + strconv.Itoa(n) + " bytes" }

// splitWords cuts s into words, each keeping the whitespace that follows
// it (leading whitespace stays with the first word), so that joining the
// chunks gives s back exactly.
func splitWords(s string) []string {
	var out []string
	start := 0
	seenWord, prevSpace := false, false
	for i, r := range s {
		space := unicode.IsSpace(r)
		if !space && prevSpace && seenWord {
			out = append(out, s[start:i])
			start = i
		}
		if !space {
			seenWord = true
		}
		prevSpace = space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
