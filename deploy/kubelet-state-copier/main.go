// kubelet-state-copier copies the kubelet's CPU, memory and DRA manager checkpoints from the
// kubelet's root directory into a directory shared with the rte agent, once a second.
//
// It is the only program in its image (FROM scratch: no shell, no coreutils, no interpreter),
// because its container must mount the host's /var/lib/kubelet: that directory also holds the
// kubelet's client credentials (pki/), installer kubeconfigs and checkpoints/. Anyone allowed
// `pods/exec` in the agent's namespace can run only what the image holds; here that is this
// program, which takes no arguments and reads only the three file names below. See
// deploy/base/agent/daemonset.yaml for why the directory, and not the files, is mounted: the
// kubelet replaces each checkpoint by writing a temporary file and renaming it over the old
// one (kubernetes/kubernetes pkg/kubelet/util/store/filestore.go, writeFile), and a bind mount
// of the file itself keeps the first inode forever.
//
// Behaviour (what the agent's directory watch relies on): a checkpoint is copied only when its
// bytes changed, through a temporary file renamed over the copy, so each new version appears
// once and whole; a checkpoint that disappears disappears from the copies. Errors are logged
// and retried on the next round; SIGTERM or SIGINT ends the program with status 0.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// The kubelet's checkpoint files the agent reads (rte/host/kubelet_state.py: CPU_MANAGER_STATE,
// MEMORY_MANAGER_STATE, DRA_MANAGER_STATE). Fixed here, never taken from the command line.
var checkpoints = []string{"cpu_manager_state", "memory_manager_state", "dra_manager_state"}

// A checkpoint larger than this is not a checkpoint (real ones are a few KiB to a few hundred
// KiB); refusing it keeps the copy within the shared volume's sizeLimit.
const maxSize = 4 << 20

const period = time.Second

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "kubelet-state-copier: takes no arguments (KUBELET_DIR and STATE_DIR come from the environment)")
		os.Exit(2)
	}
	source := envOr("KUBELET_DIR", "/host/var/lib/kubelet")
	target := envOr("STATE_DIR", "/run/rte/kubelet-state")

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	failing := map[string]string{}
	for {
		for _, name := range checkpoints {
			err := sync(filepath.Join(source, name), filepath.Join(target, name), filepath.Join(target, "."+name+".tmp"))
			// One line per change of state, not one per second while a fault lasts.
			message := ""
			if err != nil {
				message = err.Error()
			}
			if message != failing[name] {
				if message != "" {
					fmt.Fprintf(os.Stderr, "kubelet-state-copier: %s: %s\n", name, message)
				} else {
					fmt.Fprintf(os.Stderr, "kubelet-state-copier: %s: copied again\n", name)
				}
				failing[name] = message
			}
		}
		select {
		case <-stop:
			return
		case <-ticker.C:
		}
	}
}

func envOr(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}

// sync makes copyPath hold what sourcePath holds, or not exist when sourcePath does not.
func sync(sourcePath, copyPath, tmpPath string) error {
	data, err := readLimited(sourcePath)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.Remove(copyPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if err != nil {
		return err
	}
	old, err := os.ReadFile(copyPath)
	if err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := os.WriteFile(tmpPath, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmpPath, copyPath)
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSize {
		return nil, fmt.Errorf("%s is larger than %d bytes: not copied", path, maxSize)
	}
	return data, nil
}
