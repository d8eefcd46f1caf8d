// TLS connections whose client certificate subject names a tenant
// (tenants file tls_subject): the server's TLS socket factory makes
// SubjectSocket, which can say, once its handshake is done, the subject of
// the certificate the client presented (RFC 2253, as `openssl x509 -noout
// -subject -nameopt RFC2253` prints it). Internal to server/.
#ifndef FANOUT_SERVER_TLS_SUBJECT_H_
#define FANOUT_SERVER_TLS_SUBJECT_H_

#include <thrift/transport/TSSLSocket.h>

#include <memory>
#include <string>

namespace fanout::server {

class SubjectSocket : public apache::thrift::transport::TSSLSocket {
 public:
  SubjectSocket(std::shared_ptr<apache::thrift::transport::SSLContext> ctx, THRIFT_SOCKET socket)
      : TSSLSocket(std::move(ctx), socket) {}
  SubjectSocket(std::shared_ptr<apache::thrift::transport::SSLContext> ctx, THRIFT_SOCKET socket,
                std::shared_ptr<THRIFT_SOCKET> interrupt)
      : TSSLSocket(std::move(ctx), socket, std::move(interrupt)) {}
  // The client certificate's subject ("" before the handshake or without one).
  std::string PeerSubject() const;
};

class SubjectSocketFactory : public apache::thrift::transport::TSSLSocketFactory {
 public:
  using TSSLSocketFactory::TSSLSocketFactory;
  std::shared_ptr<apache::thrift::transport::TSSLSocket> createSocket(
      THRIFT_SOCKET socket) override;
  std::shared_ptr<apache::thrift::transport::TSSLSocket> createSocket(
      THRIFT_SOCKET socket, std::shared_ptr<THRIFT_SOCKET> interrupt) override;
};

}  // namespace fanout::server

#endif  // FANOUT_SERVER_TLS_SUBJECT_H_
