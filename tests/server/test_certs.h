// Certificates for TLS tests, made with the openssl command at run time: a
// CA, a server certificate for 127.0.0.1, a client certificate, an expired
// server certificate, and a second CA with its own client certificate.
#ifndef FANOUT_TESTS_SERVER_TEST_CERTS_H_
#define FANOUT_TESTS_SERVER_TEST_CERTS_H_

#include <cstdlib>
#include <fstream>
#include <string>

namespace fanout::server::testing {

struct TestCerts {
  std::string dir;
  std::string ca, ca_key;                      // the CA
  std::string server, server_key;              // signed by it, for IP 127.0.0.1
  std::string client, client_key;              // signed by it
  std::string expired, expired_key;            // signed by it, valid only in 2020
  std::string other_ca;                        // another CA
  std::string other_client, other_client_key;  // signed by the other CA
};

// Writes the files under `dir` (which must exist); false if openssl failed.
inline bool MakeTestCerts(const std::string& dir, TestCerts* out) {
  TestCerts& c = *out;
  c.dir = dir;
  auto f = [&](const std::string& name) { return dir + "/" + name; };
  c.ca = f("ca.pem"), c.ca_key = f("ca.key"), c.server = f("server.pem"),
  c.server_key = f("server.key");
  c.client = f("client.pem"), c.client_key = f("client.key"), c.expired = f("expired.pem"),
  c.expired_key = f("expired.key"), c.other_ca = f("other-ca.pem"),
  c.other_client = f("other-client.pem"), c.other_client_key = f("other-client.key");
  {
    std::ofstream cnf(f("ca.cnf"));
    cnf << "[ca]\ndefault_ca = t\n[t]\ndatabase = " << f("index.txt") << "\nnew_certs_dir = " << dir
        << "\nserial = " << f("serial")
        << "\ndefault_md = sha256\npolicy = p\nx509_extensions = ext\n"
        << "unique_subject = no\n[p]\ncommonName = supplied\n[ext]\nsubjectAltName = "
           "IP:127.0.0.1\n";
    std::ofstream(f("index.txt")).flush();
    std::ofstream(f("serial")) << "01\n";
  }
  const std::string q = " >/dev/null 2>&1";
  auto req = [&](const std::string& key, const std::string& csr, const std::string& cn) {
    return "openssl req -newkey rsa:2048 -nodes -keyout " + key + " -out " + csr +
           " -subj /CN=" + cn + q;
  };
  auto sign = [&](const std::string& csr, const std::string& cert, const std::string& ca,
                  const std::string& ca_key, const std::string& dates) {
    return "openssl ca -batch -notext -config " + f("ca.cnf") + " -cert " + ca + " -keyfile " +
           ca_key + " -in " + csr + " -out " + cert + " " + dates + q;
  };
  const std::string valid = "-days 2";
  const std::string cmds[] = {
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout " + c.ca_key + " -out " + c.ca +
          " -days 2 -subj /CN=fanout-test-ca" + q,
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout " + f("other-ca.key") + " -out " +
          c.other_ca + " -days 2 -subj /CN=other-test-ca" + q,
      req(c.server_key, f("server.csr"), "127.0.0.1"),
      sign(f("server.csr"), c.server, c.ca, c.ca_key, valid),
      req(c.client_key, f("client.csr"), "trainer"),
      sign(f("client.csr"), c.client, c.ca, c.ca_key, valid),
      req(c.expired_key, f("expired.csr"), "127.0.0.1"),
      sign(f("expired.csr"), c.expired, c.ca, c.ca_key,
           "-startdate 20200101000000Z -enddate 20200102000000Z"),
      req(c.other_client_key, f("other-client.csr"), "intruder"),
      sign(f("other-client.csr"), c.other_client, c.other_ca, f("other-ca.key"), valid),
  };
  for (const std::string& cmd : cmds)
    if (std::system(cmd.c_str()) != 0) return false;
  return true;
}

}  // namespace fanout::server::testing

#endif  // FANOUT_TESTS_SERVER_TEST_CERTS_H_
