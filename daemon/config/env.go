package config

import "github.com/soakd/soakd/internal/relational"

// The environment variables soakd reads, and those that hold secrets.

// TokenEnv is the environment variable that overrides api.token.
const TokenEnv = "SOAKD_CONTROL_TOKEN"

// TargetTokenEnv is the environment variable `soakd target` reads its
// control token from. Without it the control surface refuses every
// request (the token is then random and known to nobody).
const TargetTokenEnv = "SOAKD_TARGET_TOKEN"

// RelationalDSNEnv names the variable holding the relational scenario's
// PostgreSQL DSN, or "" when the scenario reads none.
func (cfg *Config) RelationalDSNEnv() string {
	if cfg.Target.Scenario != ScenarioRelational || cfg.Relational.Store != relational.StorePostgres {
		return ""
	}
	return cfg.Relational.DSNEnv
}

// SecretEnvs names the environment variables holding secrets soakd
// reads under cfg: SOAKD_CONTROL_TOKEN, SOAKD_TARGET_TOKEN, the one named by
// profiling.pyroscope.basic_auth_password_env and the relational scenario's
// DSN (relational.dsn_env). A driver needs none of them.
func (cfg *Config) SecretEnvs() []string {
	secrets := []string{TokenEnv, TargetTokenEnv}
	if name := cfg.Profiling.Pyroscope.BasicAuthPasswordEnv; name != "" {
		secrets = append(secrets, name)
	}
	if name := cfg.RelationalDSNEnv(); name != "" {
		secrets = append(secrets, name)
	}
	return secrets
}
