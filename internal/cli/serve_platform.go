package cli

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/keyfile"
	"novaos.dev/novaos/internal/llmgw"
	"novaos.dev/novaos/internal/memorysvc"
	"novaos.dev/novaos/internal/modelapi"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store/sqlite"
)

// platformFlagSet holds serve's flags for the platform services:
// execution tokens and the memory service.
type platformFlagSet struct {
	tokenIssuer, tokenAudience, tokenKeyFile, tokenAlg   *string
	tokenTTL, tokenMaxTTL, tokenLeeway, tokenKeyLifetime *time.Duration

	memMaxBody, memIndex                 byteSize
	scratchTTL, maxScratchTTL            *time.Duration
	consolidateEvery                     *time.Duration
	hintAttempts                         *int
	embedURL, embedModel, embedKeyFile   *string
	embedDims                            *int
	extractURL, extractModel, extractKey *string
	modelTimeout                         *time.Duration
}

func platformFlags(fs *flag.FlagSet) *platformFlagSet {
	p := &platformFlagSet{memMaxBody: byteSize{n: memorysvc.DefaultMaxBodyBytes}, memIndex: byteSize{n: sqlite.DefaultMemoryIndexBytes}}
	p.tokenIssuer = fs.String("token-issuer", "", "`iss` of the execution tokens the server signs and accepts (default: the server's base URL, --public-url or else the listen address)")
	p.tokenAudience = fs.String("token-audience", identity.DefaultAudience, "`aud` of the tokens the server signs and accepts")
	p.tokenTTL = fs.Duration("token-ttl", auth.DefaultTTL, "lifetime of a token the platform mints without one asked")
	p.tokenMaxTTL = fs.Duration("token-max-ttl", auth.DefaultMaxTTL, "longest token lifetime signed; a rotated-out key stays published this long (plus --token-leeway)")
	p.tokenLeeway = fs.Duration("token-leeway", identity.DefaultLeeway, "clock skew allowed on a token's exp, nbf and iat")
	p.tokenAlg = fs.String("token-alg", auth.RS256, "algorithm execution tokens are signed with: RS256 (2048-bit RSA, what agents built on the Python SDK verify) or EdDSA (Ed25519, much cheaper to sign)")
	p.tokenKeyFile = fs.String("token-key-file", "", "`file` of the token signing key ring (owner-only, created when missing; default <--data>/"+app.TokenKeyFile+"); replicas that verify each other's tokens share one")
	p.tokenKeyLifetime = fs.Duration("token-key-lifetime", 0, "age at which the server rotates its signing key itself (0: only on novaos token rotate)")

	fs.Var(&p.memMaxBody, "memory-max-body-bytes", "largest request body `size` of the memory service ("+"/api/v1/mcp); a larger one gets 413")
	fs.Var(&p.memIndex, "memory-index-bytes", "memory `size` of the in-process search index of memory partitions; past it the least recently searched partitions are dropped and reloaded when next searched")
	p.scratchTTL = fs.Duration("memory-scratch-ttl", memorysvc.DefaultScratchTTL, "lifetime of a run or task memory written without ttl_seconds")
	p.maxScratchTTL = fs.Duration("memory-max-scratch-ttl", memorysvc.DefaultMaxScratchTTL, "longest ttl_seconds a run or task memory may ask for")
	p.consolidateEvery = fs.Duration("memory-consolidate-every", memorysvc.DefaultConsolidateEvery, "how often the consolidation worker turns pending hints into user memories")
	p.hintAttempts = fs.Int("memory-hint-attempts", memorysvc.DefaultHintAttempts, "failed extractions after which a hint is dead-lettered")
	p.embedURL = fs.String("embedding-url", "", "base `URL` of an OpenAI-compatible embeddings API (https://api.openai.com/v1, http://127.0.0.1:11434/v1), or "+gatewayURL+": the platform's LLM gateway, as --llm-platform-tenant; default: the built-in lexical embedder, no model")
	p.embedModel = fs.String("embedding-model", "", "embedding `model` name (with --embedding-url)")
	p.embedKeyFile = fs.String("embedding-key-file", "", "`file` holding the embeddings API key (owner-only)")
	p.embedDims = fs.Int("embedding-dims", 0, "ask the embedding model for vectors of this width (0: the model's own)")
	p.extractURL = fs.String("extractor-url", "", "base `URL` of an OpenAI-compatible chat completions API that turns hints into facts, or "+gatewayURL+": the platform's LLM gateway; default: the built-in sentence splitter, no model")
	p.extractModel = fs.String("extractor-model", "", "chat `model` name (with --extractor-url)")
	p.extractKey = fs.String("extractor-key-file", "", "`file` holding the chat API key (owner-only)")
	p.modelTimeout = fs.Duration("model-timeout", modelapi.DefaultTimeout, "time one call to an embedding or chat model may take")
	return p
}

// check reports a flag combination that cannot work.
func (p *platformFlagSet) check() string {
	switch {
	case *p.tokenTTL <= 0 || *p.tokenMaxTTL <= 0 || *p.tokenTTL > *p.tokenMaxTTL:
		return "--token-ttl and --token-max-ttl must be positive, --token-ttl at most --token-max-ttl"
	case *p.tokenAlg != auth.RS256 && *p.tokenAlg != auth.EdDSA:
		return "--token-alg must be " + auth.RS256 + " or " + auth.EdDSA
	case *p.tokenLeeway < 0 || *p.tokenKeyLifetime < 0:
		return "--token-leeway and --token-key-lifetime must not be negative"
	case p.memMaxBody.n <= 0 || p.memIndex.n <= 0:
		return "--memory-max-body-bytes and --memory-index-bytes must be positive"
	case *p.scratchTTL < memorysvc.MinTTL || *p.maxScratchTTL < *p.scratchTTL:
		return "--memory-scratch-ttl must be at least 1s and at most --memory-max-scratch-ttl"
	case *p.consolidateEvery <= 0 || *p.hintAttempts < 1 || *p.modelTimeout <= 0:
		return "--memory-consolidate-every and --model-timeout must be positive, --memory-hint-attempts at least 1"
	case (*p.embedURL == "") != (*p.embedModel == ""):
		return "--embedding-url and --embedding-model go together"
	case (*p.extractURL == "") != (*p.extractModel == ""):
		return "--extractor-url and --extractor-model go together"
	case *p.embedDims < 0:
		return "--embedding-dims must not be negative"
	}
	for _, u := range []string{*p.embedURL, *p.extractURL} {
		if u != "" && u != gatewayURL && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return "--embedding-url and --extractor-url must be http:// or https:// URLs, or " + gatewayURL
		}
	}
	if *p.embedURL == gatewayURL && *p.embedKeyFile != "" || *p.extractURL == gatewayURL && *p.extractKey != "" {
		return "--embedding-key-file and --extractor-key-file are for a model API; the LLM gateway keeps its providers' keys"
	}
	return ""
}

func (p *platformFlagSet) token() app.TokenOptions {
	return app.TokenOptions{Issuer: *p.tokenIssuer, Audience: *p.tokenAudience, DefaultTTL: *p.tokenTTL, MaxTTL: *p.tokenMaxTTL,
		Leeway: *p.tokenLeeway, KeyFile: *p.tokenKeyFile, KeyLifetime: *p.tokenKeyLifetime, Algorithm: *p.tokenAlg}
}

// memory builds the memory service's options, reading the model API keys;
// a model URL of gatewayURL calls the LLM gateway through platform.
func (p *platformFlagSet) memory(platform *llmgw.Platform) (app.MemoryOptions, error) {
	o := app.MemoryOptions{MaxBodyBytes: p.memMaxBody.n,
		ScratchTTL: *p.scratchTTL, MaxScratchTTL: *p.maxScratchTTL, ConsolidateEvery: *p.consolidateEvery, HintAttempts: *p.hintAttempts,
	}
	if *p.embedURL != "" {
		url, key, mo, err := modelClient(*p.embedURL, *p.embedKeyFile, "--embedding-key-file", *p.modelTimeout, platform)
		if err != nil {
			return o, err
		}
		o.Embedder = modelapi.NewEmbedder(url, *p.embedModel, key, &modelapi.EmbedderOptions{Options: mo, Dims: *p.embedDims})
	}
	if *p.extractURL != "" {
		url, key, mo, err := modelClient(*p.extractURL, *p.extractKey, "--extractor-key-file", *p.modelTimeout, platform)
		if err != nil {
			return o, err
		}
		o.Extractor = memorysvc.ModelExtractor{Model: modelapi.NewExtractor(url, *p.extractModel, key, &mo)}
	}
	return o, nil
}

// modelClient is where a platform model client calls, with what key and
// options: the model API at url with the key in keyFile, or, for
// gatewayURL, the LLM gateway in process.
func modelClient(url, keyFile, keyFlag string, timeout time.Duration, platform *llmgw.Platform) (string, secret.Value, modelapi.Options, error) {
	mo := modelapi.Options{Timeout: timeout}
	if url == gatewayURL {
		mo.HTTPClient = platform.Client(timeout)
		return llmgw.PlatformBaseURL, secret.Value{}, mo, nil
	}
	key, err := readAPIKey(keyFile, keyFlag)
	return url, key, mo, err
}

// readAPIKey reads a model API key from an owner-only file; no file means
// no key (a local model server).
func readAPIKey(path, flagName string) (secret.Value, error) {
	if path == "" {
		return secret.Value{}, nil
	}
	b, err := keyfile.Read(path)
	if err != nil {
		return secret.Value{}, fmt.Errorf("%s: %w", flagName, err)
	}
	return secret.New(strings.TrimSpace(string(b))), nil
}
