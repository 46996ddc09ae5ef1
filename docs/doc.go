// Package docs holds cifarlab's documentation pages, one Markdown file per subject, that
// README.md links to. The package has no code of its own; its tests check the Markdown of the
// repository, so that `go test ./...` keeps it whole:
//
//   - TestMarkdownLinks: every relative link of README.md, of these pages and of the other
//     Markdown files of the repository resolves to a file or folder of the repository, and a
//     link's #anchor to a heading of the Markdown file it names (GitHub's anchors);
//   - TestReadmeIsTheFrontDoor: README.md is at most 300 lines, its first command block starts
//     with the main job (./kernel/lab.sh) and the test command (./kernel/run-tests.sh), both
//     executable files, and it links every page of docs/.
package docs
