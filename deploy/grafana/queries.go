package grafana

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Query is one Prometheus query of a dashboard: its panel and expression.
type Query struct {
	Panel string // panel title ("variable NAME" for a variable's query)
	Expr  string
}

// Queries returns every Prometheus expression of a dashboard's JSON model: the targets of its
// panels (rows' collapsed panels included) and its query variables.
func Queries(dashboardJSON []byte) ([]Query, error) {
	var d struct {
		Panels     []jsonPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(dashboardJSON, &d); err != nil {
		return nil, fmt.Errorf("dashboard JSON: %w", err)
	}
	var out []Query
	var walk func([]jsonPanel)
	walk = func(ps []jsonPanel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				out = append(out, Query{Panel: p.Title, Expr: t.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var s string
		if err := json.Unmarshal(v.Query, &s); err != nil {
			var m struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &m); err != nil {
				return nil, fmt.Errorf("variable %s: query is neither a string nor an object with a query: %s", v.Name, v.Query)
			}
			s = m.Query
		}
		out = append(out, Query{Panel: "variable " + v.Name, Expr: s})
	}
	return out, nil
}

type jsonPanel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []jsonPanel `json:"panels"`
}

// promQLWords are PromQL's keywords and the grouping words whose parenthesized lists hold label
// names, not metrics.
var promQLWords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
	"inf": true, "nan": true,
}

// MetricNames returns the metric names (series names: a histogram's name_bucket, name_count,
// name_sum as written) a PromQL expression selects, sorted and without repeats. It is a small
// lexer, not a parser: it skips strings, label matchers ({…}), ranges and subqueries ([…]),
// function and aggregation names (an identifier before "(", or before by or without), the label lists of by, without,
// on, ignoring, group_left and group_right, keywords, numbers and Grafana variables ($name), and
// takes every other identifier for a metric name. In label_values(metric, label) the label is
// skipped too.
func MetricNames(expr string) []string {
	var names []string
	rs := []rune(expr)
	skipTo := func(i int, open, close rune) int { // index after the matching close
		depth := 0
		for ; i < len(rs); i++ {
			switch rs[i] {
			case open:
				depth++
			case close:
				depth--
				if depth == 0 {
					return i + 1
				}
			case '"', '\'', '`':
				i = skipString(rs, i) - 1
			}
		}
		return i
	}
	nextNonSpace := func(i int) int {
		for i < len(rs) && unicode.IsSpace(rs[i]) {
			i++
		}
		return i
	}
	labelValuesArg := -1 // depth of label_values( … ): its second argument is a label
	depth := 0
	for i := 0; i < len(rs); {
		c := rs[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(rs, i)
		case c == '{':
			i = skipTo(i, '{', '}')
		case c == '[':
			i = skipTo(i, '[', ']')
		case c == '(':
			depth++
			i++
		case c == ')':
			if depth == labelValuesArg {
				labelValuesArg = -1
			}
			depth--
			i++
		case c == ',' && depth == labelValuesArg:
			// label_values(metric, label): skip the label.
			j := nextNonSpace(i + 1)
			for j < len(rs) && isIdent(rs[j]) {
				j++
			}
			i = j
		case c == '$':
			i++
			for i < len(rs) && (isIdent(rs[i]) || rs[i] == '{' || rs[i] == '}') {
				i++
			}
		case unicode.IsDigit(c) || (c == '.' && i+1 < len(rs) && unicode.IsDigit(rs[i+1])):
			for i < len(rs) && (isIdent(rs[i]) || rs[i] == '.' || rs[i] == '+' && (rs[i-1] == 'e' || rs[i-1] == 'E')) {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(rs) && isIdent(rs[j]) {
				j++
			}
			word := string(rs[i:j])
			k := nextNonSpace(j)
			switch {
			case promQLWords[strings.ToLower(word)] && k < len(rs) && rs[k] == '(':
				j = skipTo(k, '(', ')') // a label list
			case promQLWords[strings.ToLower(word)]:
			case k < len(rs) && rs[k] == '(':
				if word == "label_values" {
					labelValuesArg = depth + 1
				}
			case followedBy(rs[k:], "by") || followedBy(rs[k:], "without"):
				// an aggregation with its grouping first: sum by (…) (…)
			default:
				names = append(names, word)
			}
			i = j
		default:
			i++
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// followedBy reports whether rs starts with the word w (then a non-identifier rune).
func followedBy(rs []rune, w string) bool {
	n := len([]rune(w))
	return len(rs) > n && strings.EqualFold(string(rs[:n]), w) && !isIdent(rs[n])
}

func isIdentStart(r rune) bool { return r == '_' || r == ':' || unicode.IsLetter(r) }
func isIdent(r rune) bool      { return isIdentStart(r) || unicode.IsDigit(r) }

// skipString returns the index after the string literal that starts at rs[i].
func skipString(rs []rune, i int) int {
	q := rs[i]
	for i++; i < len(rs); i++ {
		if rs[i] == '\\' && q != '`' {
			i++
			continue
		}
		if rs[i] == q {
			return i + 1
		}
	}
	return i
}
