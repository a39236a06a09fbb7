// Package docs holds storeopt's documentation pages (the Markdown files of this folder) and the
// test that keeps them whole: every relative link of README.md and docs/*.md resolves, every
// docs/….md#anchor cited by a Go comment names a heading that exists, and README.md stays short.
package docs
