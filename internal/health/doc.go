// Package health checks the local kube-apiserver: GET https://localhost:PORT/livez
// with the service-account bearer token when there is one, one request at a time,
// and turns the results into Healthy/Unhealthy transitions through fail and rise
// thresholds. It knows nothing about VIPs.
package health
