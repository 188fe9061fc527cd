package judge_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"novaos.dev/novaos/internal/gatesvc/judge"
	"novaos.dev/novaos/secret"
)

func ExampleDecode() {
	known := []string{"bank-change"}
	v, err := judge.Decode([]byte(`{"verdict":"kill","rule_id_cited":"bank-change","rationale":"bank details changed yesterday"}`), known)
	fmt.Println(v.Verdict, v.RuleIDCited, err)

	// The duplicate key encoding/json would read as a pass.
	_, err = judge.Decode([]byte(`{"verdict":"kill","rule_id_cited":"bank-change","rationale":"r","verdict":"pass"}`), known)
	fmt.Println(err)
	// Output:
	// kill bank-change <nil>
	// judge: malformed verdict: duplicate_key at $.verdict (output begins "{\"verdict\":\"kill\",\"rule_id_cited\":\"bank-change\",\"rationale\":\"r\",")
}

func ExampleJudge_Judge() {
	// A stand-in for the model server.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"choices":[{"finish_reason":"stop","message":{"content":"{\"verdict\":\"hold\",\"rule_id_cited\":\"refund-disputes\",\"rationale\":\"open dispute\"}"}}]}`)
	}))
	defer srv.Close()

	j := judge.New(srv.URL+"/v1", "judge-model", secret.New("sk-example"), nil)
	v, err := j.Judge(context.Background(), judge.Request{
		Action:    `{"type":"refund","args":{"amount":620}}`,
		Reasoning: "The customer asked twice.",
		Evidence:  []judge.Evidence{{Source: "lookup_customer", Content: `{"open_disputes":1}`}},
		Rules:     []judge.Rule{{ID: "refund-disputes", Text: "Hold refunds over 500 while a dispute is open."}},
	})
	if err != nil {
		fmt.Println("fail closed:", err)
		return
	}
	fmt.Println(judge.Most("pass", v.Verdict), v.RuleIDCited)
	// Output: hold refund-disputes
}
