#include "rpc/framed_transport.h"

#include <algorithm>
#include <limits>

namespace fanout::rpc {

std::shared_ptr<apache::thrift::TConfiguration> MakeThriftConfig(int64_t max_frame_bytes) {
  int limit = static_cast<int>(std::min<int64_t>(max_frame_bytes, std::numeric_limits<int>::max()));
  // Message and frame limits are the same: a message is one frame.
  return std::make_shared<apache::thrift::TConfiguration>(limit, limit);
}

bool ResettingFramedTransport::readFrame() {
  resetConsumedMessageSize();  // the budget is per message, not per connection
  return TFramedTransport::readFrame();
}

}  // namespace fanout::rpc
