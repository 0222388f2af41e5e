package main

import (
	"bufio"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/testenv"
)

// The root go.mod has no replace directive: 'go install
// github.com/batonhq/baton/cmd/baton@VERSION' (the README's install line)
// refuses a module that has one.
func TestGoModHasNoReplace(t *testing.T) {
	f, err := os.Open("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "replace" || strings.HasPrefix(line, "replace ") || strings.HasPrefix(line, "replace(") {
			t.Errorf("go.mod:%d: %q: go install ...@VERSION refuses a module with a replace directive; remove it", n, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// The release script builds a static, stamped binary whose 'version' says
// so, and the Containerfile puts that binary, by the name the script gives
// it, on an empty base as a non-root user. Where podman is installed the
// image is built and inspected too, and run where the sandbox lets it.
// maxReleaseBytes bounds the size of the release binary (linux/amd64 and
// arm64): 26.5 MB, half of the 53 MB of the one binary of issue #44.
const maxReleaseBytes = 26_500_000

func TestReleaseBinaryAndImage(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("the release image is linux; this is %s", runtime.GOOS)
	}
	// Its own directory and build: beside the tests that mostly wait.
	testenv.ParallelUnlessLong(t)
	cf, err := os.ReadFile("../../Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	checkContainerfile(t, string(cf))

	const version = "v0.0.0-releasetest"
	dir := t.TempDir()
	cmd := exec.Command("../../scripts/release.sh", version, dir)
	cmd.Env = append(os.Environ(), "BATON_RELEASE_TARGETS="+runtime.GOOS+"/"+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/release.sh: %v\n%s", err, out)
	}
	name := "baton-" + version + "-linux-" + runtime.GOARCH
	bin := filepath.Join(dir, name)
	if err := staticELF(bin); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	// Issue #44: the operator's binary is at most half of the 53 MB the
	// one binary was before the lab left it.
	if fi, err := os.Stat(bin); err != nil {
		t.Fatal(err)
	} else if fi.Size() > maxReleaseBytes {
		t.Fatalf("%s: %d bytes; want at most %d (see releaseOnly for what grows it)", name, fi.Size(), maxReleaseBytes)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "baton "+version+" ") || !strings.Contains(string(out), "\ncommit ") ||
		!regexp.MustCompile(`store schemas: sqlite \d+, postgres \d+, etcd \d+`).Match(out) {
		t.Fatalf("%s version: %v\n%s", name, err, out)
	}
	// The operator's binary leaves the lab out (-tags nolab): its
	// commands are one line pointing to the default build.
	drill := exec.Command(bin, "drill")
	var stderr strings.Builder
	drill.Stderr = &stderr
	if err := drill.Run(); drill.ProcessState == nil || drill.ProcessState.ExitCode() != exitUsage ||
		stderr.String() != "baton drill: not in this build: the release binary is the operator's and leaves the lab out; run it from the source: go run ./cmd/baton drill\n" {
		t.Fatalf("%s drill: %v, stderr %q; want exit %d and the line pointing to the default build", name, err, stderr.String(), exitUsage)
	}
	// The Kubernetes image's binary: the same with the Lease store.
	kubeName := "baton-kube-" + version + "-linux-" + runtime.GOARCH
	kubeBin := filepath.Join(dir, kubeName)
	if err := staticELF(kubeBin); err != nil {
		t.Fatalf("%s: %v", kubeName, err)
	}
	if out, err := exec.Command(kubeBin, "version").Output(); err != nil || !strings.Contains(string(out), "\nstores linked: ") || !strings.Contains(string(out), ", kube,") {
		t.Fatalf("%s version: %v\n%s; want kube among the stores linked", kubeName, err, out)
	}
	if out, err := exec.Command(bin, "version").Output(); err != nil || strings.Contains(string(out), "kube") {
		t.Fatalf("%s version: %v\n%s; want no kube store in the operator's binary", name, err, out)
	}
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil || !strings.Contains(string(sums), "  "+name+"\n") || !strings.Contains(string(sums), "  "+kubeName+"\n") {
		t.Fatalf("SHA256SUMS: %v\n%s", err, sums)
	}

	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Logf("no podman here: the image is checked by its Containerfile and its binary, not built")
		return
	}
	tag := "localhost/baton-releasetest:" + version
	build := exec.Command(podman, "build", "-q", "-f", "../../Containerfile", "--build-arg", "VERSION="+version,
		"--build-arg", "TARGETARCH="+runtime.GOARCH, "-t", tag, dir)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("podman build: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(podman, "rmi", "-f", tag).Run() })
	cfg, err := exec.Command(podman, "image", "inspect", tag, "--format", "{{.Config.User}} {{.Config.Entrypoint}}").Output()
	if err != nil || strings.TrimSpace(string(cfg)) != "65532:65532 [/baton]" {
		t.Fatalf("the image's user and entrypoint: %v, %q; want 65532:65532 [/baton]", err, cfg)
	}
	run, err := exec.Command(podman, "run", "--rm", "--network", "none", tag, "version").CombinedOutput()
	switch {
	case err == nil:
		if !strings.HasPrefix(string(run), "baton "+version+" ") {
			t.Fatalf("podman run IMAGE version: %q", run)
		}
	case strings.Contains(string(run), "Operation not permitted"):
		// This sandbox lets podman build an image but not run one
		// (crun's setrlimit is refused): the binary ran above.
		t.Logf("podman cannot run a container here: %s", strings.TrimSpace(string(run)))
	default:
		t.Fatalf("podman run IMAGE version: %v\n%s", err, run)
	}
}

// checkContainerfile checks the release image's definition: an empty (or
// distroless static) base, a numeric non-root USER, the release script's
// binary copied and run as the entrypoint.
func checkContainerfile(t *testing.T, cf string) {
	t.Helper()
	var from, user, copyLine, entry string
	for _, line := range strings.Split(cf, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			from = strings.Join(f[1:], " ")
		case "USER":
			user = strings.Join(f[1:], " ")
		case "COPY":
			copyLine = strings.Join(f[1:], " ")
		case "ENTRYPOINT":
			entry = strings.Join(f[1:], " ")
		}
	}
	if from != "scratch" && !strings.Contains(from, "distroless/static") {
		t.Errorf("Containerfile: FROM %q; want scratch or a distroless static base", from)
	}
	if !regexp.MustCompile(`^[1-9][0-9]*(:[1-9][0-9]*)?$`).MatchString(user) {
		t.Errorf("Containerfile: USER %q; want a numeric non-root user such as 65532:65532", user)
	}
	// The name scripts/release.sh gives the linux binaries.
	if copyLine != "${FLAVOR}-${VERSION}-linux-${TARGETARCH} /baton" || !strings.Contains(cf, "\nARG FLAVOR=baton\n") {
		t.Errorf("Containerfile: COPY %q; want the release script's ${FLAVOR}-${VERSION}-linux-${TARGETARCH} to /baton, FLAVOR baton by default", copyLine)
	}
	if entry != `["/baton"]` {
		t.Errorf("Containerfile: ENTRYPOINT %s; want [\"/baton\"]", entry)
	}
}

// staticELF returns an error unless path is an ELF executable that needs
// no dynamic loader (no PT_INTERP) and no shared library: it runs on an
// empty image.
func staticELF(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("it has a PT_INTERP program header: it needs a dynamic loader (built with cgo?)")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		return errors.New("it needs shared libraries: " + strings.Join(libs, ", "))
	}
	return nil
}
