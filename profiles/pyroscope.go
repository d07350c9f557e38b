package profiles

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/grafana/pyroscope-go"
	"go.uber.org/zap"
)

const (
	// DefaultPyroscopeApplication is the application name pushed when PyroscopeOptions.ApplicationName
	// is empty.
	DefaultPyroscopeApplication = "soakd"
	// DefaultPyroscopeUploadRate is the upload period used when PyroscopeOptions.UploadRate is zero; it
	// is pyroscope-go's own default.
	DefaultPyroscopeUploadRate = 15 * time.Second
	// pyroscopeUploadTimeout bounds one upload, and so how long the stop function's flush can wait on a
	// server that does not answer (pyroscope-go's own default is 30 s).
	pyroscopeUploadTimeout = 10 * time.Second
	// pyroscopeUploaders is how many uploads may run at once (pyroscope-go starts this many workers).
	pyroscopeUploaders = 5
)

// PyroscopeOptions configures the continuous-profiling push. The zero value disables it.
type PyroscopeOptions struct {
	// ServerAddress is the Pyroscope server's base URL, e.g. http://127.0.0.1:4040; uploads go to its
	// /ingest path. Empty disables the push. pyroscope-go lets the environment variable
	// PYROSCOPE_ADHOC_SERVER_ADDRESS override it when the push is enabled.
	ServerAddress string
	// ApplicationName is the service name profiles are stored under; empty means
	// DefaultPyroscopeApplication. pyroscope-go also accepts tags in it ("soakd{env=ci}").
	ApplicationName string
	// Tags are static labels added to every uploaded profile (e.g. run=<run id>); keep them low in
	// cardinality. Per-request labels come from Labeled instead.
	Tags map[string]string
	// BasicAuthUser and BasicAuthPassword authenticate uploads with HTTP basic auth when both are set.
	BasicAuthUser, BasicAuthPassword string
	// UploadRate is how often profiles are cut and uploaded; zero means DefaultPyroscopeUploadRate.
	UploadRate time.Duration
}

// StartPyroscope starts pushing this process's profiles to a Pyroscope server: CPU (with the pprof labels
// Labeled sets, so GraphQL and REST are separable) and the heap's alloc/inuse objects and bytes. It runs
// pyroscope-go with DisableGCRuns, because its default forces a GC before a heap upload when none ran
// since the last one, and forced cycles would pollute the GC KPIs. The returned stop function uploads
// what has been collected, waits for the uploads (each bounded by a 10 s timeout) and stops every
// goroutine the push started; calling it again does nothing. An empty ServerAddress returns a no-op stop
// and no error.
//
// The push holds Go's single CPU profiler for as long as it runs: StartCPUProfile and
// /debug/pprof/profile fail meanwhile (see StartCPUProfile). Its heap uploads read runtime.MemStats,
// which stops the world briefly once per upload period.
func StartPyroscope(o PyroscopeOptions, log *zap.Logger) (stop func() error, err error) {
	if o.ServerAddress == "" {
		return func() error { return nil }, nil
	}
	u, err := url.Parse(o.ServerAddress)
	if err != nil {
		return nil, fmt.Errorf("cannot start pyroscope: bad server address: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("cannot start pyroscope: server address %q is not an http(s) URL", o.ServerAddress)
	}
	if o.UploadRate < 0 {
		return nil, fmt.Errorf("cannot start pyroscope: negative upload rate %s", o.UploadRate)
	}
	if o.UploadRate == 0 {
		o.UploadRate = DefaultPyroscopeUploadRate
	}
	if o.ApplicationName == "" {
		o.ApplicationName = DefaultPyroscopeApplication
	}
	if log == nil {
		log = zap.NewNop()
	}
	log = log.Named("pyroscope")

	// Our own client, so that stop can close its idle connections and uploads have a shorter timeout.
	// Like pyroscope-go's, it does not follow redirects (they would drop the Authorization header).
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxConnsPerHost = pyroscopeUploaders
	client := &http.Client{
		Transport:     transport,
		Timeout:       pyroscopeUploadTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	p, err := pyroscope.Start(pyroscope.Config{
		ApplicationName:   o.ApplicationName,
		Tags:              maps.Clone(o.Tags),
		ServerAddress:     o.ServerAddress,
		BasicAuthUser:     o.BasicAuthUser,
		BasicAuthPassword: o.BasicAuthPassword,
		UploadRate:        o.UploadRate,
		Logger:            pyroscopeLogger{log.Sugar()},
		ProfileTypes: []pyroscope.ProfileType{
			pyroscope.ProfileCPU,
			pyroscope.ProfileAllocObjects,
			pyroscope.ProfileAllocSpace,
			pyroscope.ProfileInuseObjects,
			pyroscope.ProfileInuseSpace,
		},
		DisableGCRuns: true,
		HTTPClient:    client,
	})
	if err != nil {
		transport.CloseIdleConnections()
		return nil, fmt.Errorf("cannot start pyroscope: %w", err)
	}
	log.Info("pushing profiles", zap.String("server", u.Redacted()), zap.String("application", o.ApplicationName),
		zap.Any("tags", o.Tags), zap.Duration("upload_rate", o.UploadRate))

	var once sync.Once
	return func() error {
		var err error
		once.Do(func() {
			start := time.Now()
			p.Flush(true) // cut and upload the current profiles, and wait for every upload
			err = p.Stop()
			transport.CloseIdleConnections()
			if err != nil {
				err = fmt.Errorf("cannot stop pyroscope: %w", err)
			}
			log.Info("pyroscope stopped", zap.Duration("took", time.Since(start)))
		})
		return err
	}, nil
}

// pyroscopeLogger adapts zap to pyroscope-go's logger. Its errors (failed uploads) are warnings for us:
// the push is an aid, never a reason to fail a run.
type pyroscopeLogger struct{ s *zap.SugaredLogger }

var _ pyroscope.Logger = pyroscopeLogger{}

func (l pyroscopeLogger) Infof(format string, args ...any)  { l.s.Debugf(format, args...) }
func (l pyroscopeLogger) Debugf(format string, args ...any) { l.s.Debugf(format, args...) }
func (l pyroscopeLogger) Errorf(format string, args ...any) { l.s.Warnf(format, args...) }
