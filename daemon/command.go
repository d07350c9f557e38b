package daemon

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// commandProc is a target process soakd started (kind command).
type commandProc struct {
	exited   chan struct{}
	stopping atomic.Bool
	stderr   *tailBuffer
}

func startCommand(context.Context, TargetConfig, string, []string, *zap.Logger) (*commandProc, error) {
	return nil, errors.New("target.kind command is not implemented yet")
}

func (p *commandProc) pid() int                                  { return 0 }
func (p *commandProc) exitError() error                          { return nil }
func (p *commandProc) exitStatus() string                        { return "" }
func (p *commandProc) stop(context.Context, time.Duration) error { return nil }
