// Package agent connects the parts: health transitions make this node a
// candidate or not, the elector turns candidacy into hold decisions, and the
// announcer makes them true. It owns the shutdown order: the elector resigns
// first, then the announcer releases everything it holds.
package agent
