package api

import (
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"

	"github.com/jobhooks/jobhooks/telemetry"
)

// traced returns the middleware that puts each request in a server span
// named after its route template (http.route). The span never holds the
// request's path or query: a relay path carries a listener's relay token,
// which is all it takes to deliver to that listener, and spans go to
// everyone who reads the traces. otelgin records the URL path it is given
// (url.path), so it gets a copy of the request without one, and the
// handlers after it get the request as it came, in the span's context.
func traced(tel *telemetry.Telemetry) []gin.HandlerFunc {
	return []gin.HandlerFunc{
		withoutURL,
		otelgin.Middleware("webhooks-api",
			otelgin.WithTracerProvider(tel.TracerProvider),
			otelgin.WithMeterProvider(tel.MeterProvider),
			otelgin.WithPropagators(tel.Propagator),
			otelgin.WithGinFilter(func(c *gin.Context) bool { return c.FullPath() != "/healthz" && c.FullPath() != "/readyz" }),
		),
		withURL,
	}
}

// requestWithURLKey keeps, while otelgin sees a copy without it, the
// request with its URL.
const requestWithURLKey = "api.requestWithURL"

// withoutURL hands the next handler (otelgin) a copy of the request with
// an empty URL; gin has routed it already, and its parameters are in the
// context.
func withoutURL(c *gin.Context) {
	whole := c.Request
	shown := whole.WithContext(whole.Context()) // a shallow copy: whole stays as it came
	shown.URL, shown.RequestURI = &url.URL{}, ""
	c.Set(requestWithURLKey, whole)
	c.Request = shown
	c.Next()
}

// withURL gives the handlers after otelgin the request as it came, in the
// context otelgin made (with the span).
func withURL(c *gin.Context) {
	if whole, ok := c.Get(requestWithURLKey); ok {
		c.Request = whole.(*http.Request).WithContext(c.Request.Context())
	}
	c.Next()
}
