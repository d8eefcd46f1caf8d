#include "server/tls_subject.h"

#include <openssl/bio.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace fanout::server {

std::string SubjectSocket::PeerSubject() const {
  if (ssl_ == nullptr) return "";
  X509* cert = SSL_get1_peer_certificate(ssl_);
  if (cert == nullptr) return "";
  std::string out;
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio != nullptr &&
      X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253) >= 0) {
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    if (n > 0 && n < 4096) out.assign(data, static_cast<size_t>(n));
  }
  BIO_free(bio);
  X509_free(cert);
  return out;
}

std::shared_ptr<apache::thrift::transport::TSSLSocket> SubjectSocketFactory::createSocket(
    THRIFT_SOCKET socket) {
  auto s = std::make_shared<SubjectSocket>(ctx_, socket);
  s->server(server());
  return s;
}

std::shared_ptr<apache::thrift::transport::TSSLSocket> SubjectSocketFactory::createSocket(
    THRIFT_SOCKET socket, std::shared_ptr<THRIFT_SOCKET> interrupt) {
  auto s = std::make_shared<SubjectSocket>(ctx_, socket, std::move(interrupt));
  s->server(server());
  return s;
}

}  // namespace fanout::server
