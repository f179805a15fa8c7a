package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// child is a component binary the harness runs (Kueue, nfd-master); etcd and
// kube-apiserver are run by envtest.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// spawn starts binDir/name with its output in <work-dir>/<name>.log. When it
// exits before stop asks it to, the error goes to c.exited, which ends the
// harness: a cluster with a dead component is not a cluster.
func (c *cluster) spawn(name string, args, env []string) (*child, error) {
	logFile, err := os.Create(c.path(name + ".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(c.opts.binDir, name), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), env...)
	// Should the harness be killed outright, the kernel kills the child too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	ch := &child{name: name, cmd: cmd, done: make(chan struct{})}
	c.children = append(c.children, ch)
	go func() {
		ch.err = cmd.Wait()
		logFile.Close()
		close(ch.done)
		c.exited <- fmt.Errorf("%s exited unexpectedly (%v); see %s", name, ch.err, logFile.Name())
	}()
	logf("%s: started, pid %d, log %s", name, cmd.Process.Pid, logFile.Name())
	return ch, nil
}

// stop sends SIGTERM, and SIGKILL after grace.
func (ch *child) stop(grace time.Duration) error {
	select {
	case <-ch.done:
		return nil // already gone; its exit was reported
	default:
	}
	_ = ch.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ch.done:
		return nil
	case <-time.After(grace):
		_ = ch.cmd.Process.Kill()
		<-ch.done
		return errors.New(ch.name + " ignored SIGTERM and was killed")
	}
}
