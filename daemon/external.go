package daemon

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/soakd/soakd/report"
)

// openExternal opens a target soakd does not host.
func openExternal(ctx context.Context, cfg *Config, logDir string, log *zap.Logger) (RunTarget, error) {
	return nil, errors.New("target.kind " + cfg.Target.Kind + " is not implemented yet")
}

// externalNotes replaces the standing notes that describe the built-in
// target.
func externalNotes(info report.TargetInfo, notes []string) []string { return notes }
