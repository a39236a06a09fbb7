package docs

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's root, seen from this package's folder.
const root = ".."

// designAnchors are the sections of docs/design.md that code comments cite (grep the Go code for
// "docs/design.md#"); removing or renaming one of these headings breaks those citations.
var designAnchors = []string{
	"vocabulary", "the-data-path", "workflows-do-no-io", "payloads-stay-small",
	"originals-are-never-modified", "commit-is-atomic-and-idempotent", "deterministic-output",
	"verify-before-commit", "bounded-memory", "one-bad-topic-never-stops-a-run", "errors-are-typed",
	"one-optimization-per-topic", "storeopt-never-refuses-its-own-output", "arrow-go-facts",
	"leases", "batches-of-tiny-topics", "verification", "failures-and-quarantine",
}

// pages returns README.md, every docs/*.md and the other READMEs of the repository, relative to
// root.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no docs/*.md found")
	}
	out := []string{filepath.Join(root, "README.md"), filepath.Join(root, "bench", "README.md"),
		filepath.Join(root, "workflows", "testdata", "histories", "README.md")}
	return append(out, docs...)
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	heading    = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	inlineLink = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// slug is GitHub's anchor of a heading's text: inline Markdown dropped (code spans keep their
// text, links their text), lower case, every character but letters, digits, marks, '_', '-' and
// spaces removed, spaces turned into '-'.
func slug(text string) string {
	text = inlineLink.ReplaceAllString(text, "$1")
	text = strings.NewReplacer("`", "", "**", "", "*", "").Replace(text)
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// link is one Markdown link of a page.
type link struct {
	line   int
	target string
}

// parse returns the anchors of a page's headings (with GitHub's -1, -2… for repeated ones) and
// its inline links, outside fenced code blocks and code spans.
func parse(t *testing.T, path string) (anchors map[string]bool, links []link) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	anchors = map[string]bool{}
	seen := map[string]int{}
	inFence := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := slug(m[2])
			a := s
			if k := seen[s]; k > 0 {
				a = fmt.Sprintf("%s-%d", s, k)
			}
			seen[s]++
			anchors[a] = true
		}
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			links = append(links, link{line: n, target: m[2]})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return anchors, links
}

// anchorsOf caches the heading anchors of Markdown files.
type anchorsOf map[string]map[string]bool

func (c anchorsOf) get(t *testing.T, path string) map[string]bool {
	if a, ok := c[path]; ok {
		return a
	}
	a, _ := parse(t, path)
	c[path] = a
	return a
}

// TestLinksResolve walks every relative link of the pages: the file (or folder)
// must exist and a #anchor must be a heading of the target page.
func TestLinksResolve(t *testing.T) {
	cache := anchorsOf{}
	checked := 0
	for _, page := range pages(t) {
		_, links := parse(t, page)
		for _, l := range links {
			if l.target == "" || scheme.MatchString(l.target) {
				continue
			}
			checked++
			file, anchor, _ := strings.Cut(l.target, "#")
			where := fmt.Sprintf("%s:%d: link %q", strings.TrimPrefix(page, root+"/"), l.line, l.target)
			target := page
			if file != "" {
				target = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s: no such file %s", where, target)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(target, ".md") {
				t.Errorf("%s: an anchor into a file that is not Markdown", where)
				continue
			}
			if !cache.get(t, target)[anchor] {
				t.Errorf("%s: no heading with anchor #%s in %s", where, anchor, target)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the link parser is broken")
	}
}

// TestDesignHasCitedSections checks that docs/design.md has every section code comments cite.
func TestDesignHasCitedSections(t *testing.T) {
	anchors, _ := parse(t, filepath.Join(root, "docs", "design.md"))
	for _, a := range designAnchors {
		if !anchors[a] {
			t.Errorf("docs/design.md: no heading with anchor #%s", a)
		}
	}
}

var docCitation = regexp.MustCompile(`docs/([A-Za-z0-9_-]+\.md)(?:#([A-Za-z0-9_-]+))?`)

// TestCodeCitationsResolve checks every docs/<page>.md#anchor that a Go file (comment or string)
// names: the page exists and has the heading. The design is cited only from docs/design.md.
func TestCodeCitationsResolve(t *testing.T) {
	cache := anchorsOf{}
	oldName := "DESIGN" + ".md" // the design's name before it lived in the repository
	cited := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(path, root+"/")
		for n, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, oldName) && rel != "docs/docs_test.go" {
				t.Errorf("%s:%d: cites %s, which is not in the repository: cite docs/design.md#<anchor>", rel, n+1, oldName)
			}
			for _, m := range docCitation.FindAllStringSubmatch(line, -1) {
				cited++
				page := filepath.Join(root, "docs", m[1])
				if _, err := os.Stat(page); err != nil {
					t.Errorf("%s:%d: cites docs/%s, which does not exist", rel, n+1, m[1])
					continue
				}
				if m[2] != "" && !cache.get(t, page)[m[2]] {
					t.Errorf("%s:%d: cites docs/%s#%s: no such heading", rel, n+1, m[1], m[2])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cited == 0 {
		t.Fatal("no docs/….md citation found in the Go code")
	}
}

// TestSlug checks the anchor rules against headings of the kind these pages have.
func TestSlug(t *testing.T) {
	for text, want := range map[string]string{
		"Workflows do no I/O":                               "workflows-do-no-io",
		"storeopt never refuses its own output":             "storeopt-never-refuses-its-own-output",
		"arrow-go facts":                                    "arrow-go-facts",
		"`--max-chunk-size` is a soft limit":                "--max-chunk-size-is-a-soft-limit",
		"Levels, policies (topics being recorded)":          "levels-policies-topics-being-recorded",
		"Connecting to a secured Temporal (Temporal Cloud)": "connecting-to-a-secured-temporal-temporal-cloud",
		"**Bold** and [a link](x.md)":                       "bold-and-a-link",
	} {
		if got := slug(text); got != want {
			t.Errorf("slug(%q) = %q, want %q", text, got, want)
		}
	}
	if !slices.Contains(designAnchors, slug("Batches of tiny topics")) {
		t.Error("slug of a design heading is not among the cited anchors")
	}
}

// maxReadmeLines is the README's limit: an entry page; everything else lives in docs/.
const maxReadmeLines = 320

// TestReadmeIsShort counts README.md's lines as wc -l does (newline characters).
func TestReadmeIsShort(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: move detail to a page of docs/ and link it", n, maxReadmeLines)
	}
}

// TestLayoutNamesEveryPackage checks that the README's layout names every top-level folder holding
// Go code, and every package below internal/ and metrics/ (written `internal/testenv` or
// `metrics/metricstest`).
func TestLayoutNamesEveryPackage(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	_, layout, ok := strings.Cut(readme, "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no ## Layout section")
	}
	layout, _, _ = strings.Cut(layout, "\n## ")
	named := func(p string) bool {
		return strings.Contains(layout, "`"+p+"/") || strings.Contains(layout, "`"+p+"`")
	}
	dirs := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			rel := filepath.ToSlash(strings.TrimPrefix(filepath.Dir(path), root+"/"))
			if rel != root {
				dirs[rel] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range dirs {
		parts := strings.Split(dir, "/")
		want := parts[0]
		if len(parts) > 1 && (parts[0] == "internal" || parts[0] == "metrics") {
			want = parts[0] + "/" + parts[1]
		}
		if !named(want) {
			t.Errorf("README.md's layout does not name %s (Go code in %s)", want, dir)
		}
	}
}
