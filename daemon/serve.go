package daemon

import (
	"context"
	"fmt"

	"go.uber.org/zap"
)

// Serve runs the target (GraphQL, REST control group, /metrics,
// /debug/pprof/) until ctx is cancelled (SIGTERM), then shuts it down
// gracefully. Drive it with `soakd drive --target URL` from another process.
func Serve(ctx context.Context, cfg *Config, log *zap.Logger) error {
	t, err := StartTarget(ctx, cfg, log)
	if err != nil {
		return err
	}
	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("stopping: signal received")
	case err := <-t.Failed():
		serveErr = fmt.Errorf("the target stopped serving: %w", err)
	}
	if err := t.Shutdown(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	return serveErr
}
