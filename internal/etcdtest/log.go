package etcdtest

import (
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// quietLogger logs errors to stderr, except two that members log in normal
// operation: on Close, and once at first start.
func quietLogger() *zap.Logger {
	enc := zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
	core := zapcore.NewCore(enc, zapcore.Lock(os.Stderr), zapcore.ErrorLevel)
	return zap.New(dropShutdownNoise{core})
}

// dropShutdownNoise drops the benign errors named in Check.
type dropShutdownNoise struct{ zapcore.Core }

func (d dropShutdownNoise) With(fs []zapcore.Field) zapcore.Core {
	return dropShutdownNoise{d.Core.With(fs)}
}

func (d dropShutdownNoise) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	switch e.Message {
	case "setting up serving from embedded etcd failed.", // listeners closed by Close
		"failed to update storage version": // a race at first start, retried by etcd
		return ce
	}
	if d.Enabled(e.Level) {
		return ce.AddCore(e, d)
	}
	return ce
}
