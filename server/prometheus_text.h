// Prometheus text exposition (format 0.0.4), written one family at a time:
// the server's /metrics (server_metrics.cc's request counters and the
// server's own gauges) goes through this, so every family has its HELP and
// TYPE lines in one shape.
#ifndef FANOUT_SERVER_PROMETHEUS_TEXT_H_
#define FANOUT_SERVER_PROMETHEUS_TEXT_H_

#include <cinttypes>
#include <cstdio>
#include <string>

namespace fanout::server {

class PrometheusText {
 public:
  // A family's header: "# HELP name help" and "# TYPE name type".
  PrometheusText& Family(const char* name, const char* type, const char* help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
    return *this;
  }
  // One sample: name{labels} value; labels is "" or `key="value",...`.
  PrometheusText& Sample(const char* name, const std::string& labels, int64_t value) {
    char v[32];
    std::snprintf(v, sizeof v, "%" PRId64, value);
    return Line(name, labels, v);
  }
  PrometheusText& Sample(const char* name, const std::string& labels, double value) {
    char v[32];
    std::snprintf(v, sizeof v, "%.9g", value);
    return Line(name, labels, v);
  }
  // A family of one unlabelled sample.
  PrometheusText& Counter(const char* name, const char* help, int64_t value) {
    return Family(name, "counter", help).Sample(name, "", value);
  }
  PrometheusText& Gauge(const char* name, const char* help, int64_t value) {
    return Family(name, "gauge", help).Sample(name, "", value);
  }
  // Text written elsewhere in this format, appended as it is.
  PrometheusText& Append(const std::string& text) {
    out_ += text;
    return *this;
  }
  const std::string& str() const { return out_; }

 private:
  PrometheusText& Line(const char* name, const std::string& labels, const char* value) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      out_ += labels;
      out_ += '}';
    }
    out_ += ' ';
    out_ += value;
    out_ += '\n';
    return *this;
  }
  std::string out_;
};

}  // namespace fanout::server

#endif  // FANOUT_SERVER_PROMETHEUS_TEXT_H_
