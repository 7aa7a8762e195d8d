// Package bodyread holds a request body's reads to time: each read must
// bring bytes within a timeout, and once that allowance is used up the
// body must keep arriving at a minimum average rate, enforced as read
// deadlines on the client's connection. It also joins a body read in
// chunks into one slice; how much memory a body may take is the caller's
// business.
package bodyread
