package history

import (
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
)

// ErrNoFile means a run has no served file of that name: it does not
// exist, is not a regular file (a directory, a symbolic link, a FIFO), or
// its name is not one the caller's rule accepts.
const ErrNoFile = Error("no such run file")

// File is one regular file of a run's directory.
type File struct {
	Name string
	// Bytes is its size; Modified when it was last written.
	Bytes    int64
	Modified time.Time
}

// Files lists run id's regular files whose names valid accepts, sorted by
// name. Subdirectories, symbolic links and other special files are left
// out: a run directory's files are what soakd wrote there. The error wraps
// ErrNotFound for an unknown id.
func (s *Store) Files(id string, valid func(string) bool) ([]File, error) {
	root, err := s.runRoot(id)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil, fmt.Errorf("cannot list run %s's files: %w", id, err)
	}
	var out []File
	for _, e := range entries {
		if !e.Type().IsRegular() || !valid(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed since it was listed
		}
		out = append(out, File{Name: e.Name(), Bytes: info.Size(), Modified: info.ModTime()})
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// OpenFile opens run id's file name for reading, when valid accepts the
// name and it is a regular file in the run's directory itself, not a
// symbolic link. It opens through an os.Root on that directory, so neither
// a name nor a link planted in the directory reaches a file outside it. The error wraps ErrNotFound for an
// unknown id and wraps ErrNoFile for anything else that
// is not a run file.
func (s *Store) OpenFile(id, name string, valid func(string) bool) (*os.File, error) {
	if !valid(name) || strings.ContainsAny(name, `/\`) {
		if _, err := s.summary(id); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("run %s, file %q: %w", id, name, ErrNoFile)
	}
	root, err := s.runRoot(id)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	// os.Root follows a link that stays inside the root, so the name is
	// looked at first (a link or anything but a regular file is refused)
	// and the file opened is checked to be the one looked at.
	lst, err := root.Lstat(name)
	if err != nil {
		return nil, fmt.Errorf("run %s, file %q: %w: %w", id, name, ErrNoFile, err)
	}
	if !lst.Mode().IsRegular() {
		return nil, fmt.Errorf("run %s, file %q is not a regular file (%s): %w", id, name, lst.Mode().Type(), ErrNoFile)
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("run %s, file %q: %w: %w", id, name, ErrNoFile, err)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || !os.SameFile(st, lst) {
		f.Close()
		return nil, fmt.Errorf("run %s, file %q changed while it was opened: %w", id, name, ErrNoFile)
	}
	return f, nil
}

// summary is run id's index entry, or an error wrapping ErrNotFound.
func (s *Store) summary(id string) (Summary, error) {
	s.mu.RLock()
	sum, ok := s.index[id]
	s.mu.RUnlock()
	if !ok {
		return Summary{}, fmt.Errorf("run %q: %w", id, ErrNotFound)
	}
	return sum, nil
}

// runRoot opens run id's directory as an os.Root, through an os.Root on
// the runs directory: a run directory that is a symbolic link (to /etc,
// say) is no run, and nothing opened through it leaves it. The error
// wraps ErrNotFound for an unknown id or a directory gone or replaced.
func (s *Store) runRoot(id string) (*os.Root, error) {
	if _, err := s.summary(id); err != nil {
		return nil, err
	}
	runs, err := os.OpenRoot(s.runs)
	if err != nil {
		return nil, fmt.Errorf("run %q: %w: %w", id, ErrNotFound, err)
	}
	defer runs.Close()
	fi, err := runs.Lstat(id)
	if err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("run %q: its directory is gone or is not a directory: %w", id, ErrNotFound)
	}
	root, err := runs.OpenRoot(id)
	if err != nil {
		return nil, fmt.Errorf("run %q: %w: %w", id, ErrNotFound, err)
	}
	return root, nil
}
