package gitserver

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// ClientKey is an SSH key pair for a client.
type ClientKey struct {
	// PrivatePEM is the private key in OpenSSH PEM form (the "identity" of a Secret).
	PrivatePEM []byte
	// Public is the public key.
	Public ssh.PublicKey
	// AuthorizedKey is Public in authorized_keys form ("identity.pub").
	AuthorizedKey []byte
}

// NewClientKey generates an ed25519 client key pair.
func NewClientKey() (*ClientKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return nil, fmt.Errorf("marshalling key: %w", err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("converting key: %w", err)
	}
	return &ClientKey{PrivatePEM: pem.EncodeToMemory(block), Public: sshPub,
		AuthorizedKey: ssh.MarshalAuthorizedKey(sshPub)}, nil
}

// sshServer is the SSH front of a Server.
type sshServer struct {
	ln      net.Listener
	hostKey ssh.Signer
	wg      sync.WaitGroup
}

// AuthorizeKey lets the holder of the private key of pub fetch over SSH.
func (s *Server) AuthorizeKey(pub ssh.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authKeys = append(s.authKeys, pub.Marshal())
}

// StartSSH serves the repositories over SSH (git-upload-pack only) on a loopback port with a
// fresh ed25519 host key and returns the base URL, e.g. "ssh://git@127.0.0.1:40022".
func (s *Server) StartSSH() (string, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("generating host key: %w", err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return "", fmt.Errorf("host key: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listening: %w", err)
	}
	cfg := &ssh.ServerConfig{PublicKeyCallback: s.checkKey}
	cfg.AddHostKey(signer)
	ss := &sshServer{ln: ln, hostKey: signer}
	ss.wg.Add(1)
	go func() {
		defer ss.wg.Done()
		s.acceptSSH(ln, cfg)
	}()
	s.mu.Lock()
	s.ssh = ss
	s.mu.Unlock()
	return "ssh://git@" + ln.Addr().String(), nil
}

// SSHURL returns the SSH URL of repository name; StartSSH must have been called.
func (s *Server) SSHURL(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ssh == nil {
		return ""
	}
	return "ssh://git@" + s.ssh.ln.Addr().String() + "/" + name + ".git"
}

// KnownHosts returns a known_hosts line for the SSH server's host key.
func (s *Server) KnownHosts() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ssh == nil {
		return nil
	}
	addr := knownhosts.Normalize(s.ssh.ln.Addr().String())
	return []byte(knownhosts.Line([]string{addr}, s.ssh.hostKey.PublicKey()) + "\n")
}

func (ss *sshServer) close() {
	_ = ss.ln.Close()
	ss.wg.Wait()
}

// checkKey accepts authorized client keys.
func (s *Server) checkKey(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.authKeys {
		if bytes.Equal(k, key.Marshal()) {
			return &ssh.Permissions{}, nil
		}
	}
	return nil, errors.New("unknown public key")
}

func (s *Server) acceptSSH(ln net.Listener, cfg *ssh.ServerConfig) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go s.serveSSH(conn, cfg)
	}
}

// serveSSH runs one connection: session channels with one exec each.
func (s *Server) serveSSH(conn net.Conn, cfg *ssh.ServerConfig) {
	defer conn.Close()
	sconn, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		return
	}
	defer sconn.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			continue
		}
		go s.serveSession(ch, chReqs)
	}
}

// serveSession waits for an exec request and runs git-upload-pack.
func (s *Server) serveSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	for req := range reqs {
		if req.Type != "exec" {
			_ = req.Reply(req.Type == "env", nil)
			continue
		}
		var payload struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
			_ = req.Reply(false, nil)
			return
		}
		dir, err := s.uploadPackDir(payload.Command)
		if err != nil {
			_ = req.Reply(false, nil)
			fmt.Fprintln(ch.Stderr(), err)
			return
		}
		_ = req.Reply(true, nil)
		code := s.runUploadPack(ch, dir)
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{code}))
		return
	}
}

// uploadPackDir parses "git-upload-pack '/name.git'" into a repository directory.
func (s *Server) uploadPackDir(command string) (string, error) {
	prog, arg, ok := strings.Cut(command, " ")
	if !ok || prog != "git-upload-pack" {
		return "", fmt.Errorf("unsupported command %q", command)
	}
	p := path.Clean("/" + strings.Trim(arg, `'"`))
	dir := filepath.Join(s.root, filepath.FromSlash(p))
	if s.Repo(strings.TrimSuffix(path.Base(p), ".git")) == nil {
		return "", fmt.Errorf("repository %q not found", p)
	}
	return dir, nil
}

// runUploadPack runs git-upload-pack on dir over the channel and returns its exit code.
func (s *Server) runUploadPack(ch ssh.Channel, dir string) uint32 {
	s.uploads.Add(1)
	cmd := exec.Command("git-upload-pack", dir)
	cmd.Env = append(cmd.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	cmd.Stdin = ch
	cmd.Stdout = io.MultiWriter(ch, writerFunc(func(p []byte) { s.bytes.Add(int64(len(p))) }))
	cmd.Stderr = ch.Stderr()
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return uint32(ee.ExitCode())
		}
		return 1
	}
	return 0
}

// writerFunc counts bytes written.
type writerFunc func(p []byte)

func (f writerFunc) Write(p []byte) (int, error) {
	f(p)
	return len(p), nil
}
