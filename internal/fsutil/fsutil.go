// Package fsutil holds soakd's rules for files. It writes them
// atomically: a reader, and a crash at any moment, see either the old file
// or the whole new one, never a part (reports, history, profiles, session
// files). And it opens a file a user names only when it is a regular file
// of a real file system (OpenRegular): configurations and CSV data.
package fsutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Temp is a file being written next to the path it will take: Commit syncs
// it, renames it over that path and syncs the directory; Abort removes it.
// Its zero value is not usable: make one with Create.
type Temp struct {
	f    *os.File
	path string
}

// Create opens a temporary file in path's directory (which must exist)
// with mode perm, to be committed to path.
func Create(path string, perm os.FileMode) (*Temp, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("cannot create a temporary file for %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return nil, errors.Join(fmt.Errorf("cannot set the mode of %s: %w", f.Name(), err), f.Close(), os.Remove(f.Name()))
	}
	return &Temp{f: f, path: path}, nil
}

// Write writes to the temporary file.
func (t *Temp) Write(p []byte) (int, error) { return t.f.Write(p) }

// Commit syncs and closes the temporary file, renames it over its path and
// syncs the directory, so the rename survives a crash. On failure the
// temporary file is removed and path keeps what it held.
func (t *Temp) Commit() error {
	if err := t.f.Sync(); err != nil {
		return errors.Join(fmt.Errorf("cannot sync %s: %w", t.f.Name(), err), t.Abort())
	}
	if err := t.f.Close(); err != nil {
		return errors.Join(fmt.Errorf("cannot close %s: %w", t.f.Name(), err), os.Remove(t.f.Name()))
	}
	if err := os.Rename(t.f.Name(), t.path); err != nil {
		return errors.Join(fmt.Errorf("cannot move %s into place: %w", t.path, err), os.Remove(t.f.Name()))
	}
	dir := filepath.Dir(t.path)
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cannot open %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("cannot sync directory %s: %w", dir, err)
	}
	return nil
}

// Abort closes and removes the temporary file; path is untouched.
func (t *Temp) Abort() error {
	return errors.Join(t.f.Close(), os.Remove(t.f.Name()))
}

// WriteWith writes path atomically with what write writes (Create, write,
// Commit); a failed write leaves path as it was.
func WriteWith(path string, perm os.FileMode, write func(io.Writer) error) error {
	t, err := Create(path, perm)
	if err != nil {
		return err
	}
	if err := write(t); err != nil {
		return errors.Join(fmt.Errorf("cannot write %s: %w", path, err), t.Abort())
	}
	return t.Commit()
}

// WriteFile writes data to path atomically, with mode perm.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return WriteWith(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
