#include "server/data_plane_service.h"

#include "rpc/codec.h"

namespace fanout::server {

Status DataPlaneService::Handle(const rpc::DataRequest& r, rpc::ReplyWriter* reply) {
  size_t bytes = 0;
  // The tenant its ticket named (the default one on a server without tenants).
  const Tenancy* tenancy = svc_.state().tenancy.get();
  svc_.SetTenant(r.tenant >= 0 ? r.tenant : tenancy != nullptr ? tenancy->DefaultId() : -1);
  PartitionService::Work work;
  work.ids = static_cast<int64_t>(r.ids.size());
  work.draws =
      ServiceWork::SampleDraws(r.call.fanout, {}, false, !r.call.walk_keys.empty(), r.call.labor);
  switch (r.method) {
    case rpc::DataMethod::kFeatures:
      return svc_.Run(
          kLookupFeatures, kUcx, &bytes,
          [&]() -> Status {
            FANOUT_RETURN_IF_ERROR(svc_.CheckIds(r.ids));
            FANOUT_RETURN_IF_ERROR(svc_.CheckReplyBytes(r.ids.size(), svc_.FeatureRowBytes()));
            char* out = reply->Reserve(r.ids.size() * svc_.FeatureRowBytes());
            FANOUT_RETURN_IF_ERROR(svc_.GatherFeatures(r.ids, out));
            // A live partition: the rows batches at or below the version replaced.
            int64_t read_at = -1;
            FANOUT_RETURN_IF_ERROR(svc_.OverlayLive(r.ids, r.call.version, out, nullptr, &read_at));
            bytes = reply->size();
            return Status::OK();
          },
          work);
    case rpc::DataMethod::kLabels:
      return svc_.Run(
          kLookupLabels, kUcx, &bytes,
          [&]() -> Status {
            FANOUT_RETURN_IF_ERROR(svc_.CheckIds(r.ids));
            char* out = reply->Reserve(r.ids.size() * 8);
            FANOUT_RETURN_IF_ERROR(svc_.Labels(r.ids, reinterpret_cast<int64_t*>(out)));
            int64_t read_at = -1;
            FANOUT_RETURN_IF_ERROR(svc_.OverlayLive(r.ids, r.call.version, nullptr,
                                                    reinterpret_cast<int64_t*>(out), &read_at));
            bytes = reply->size();
            return Status::OK();
          },
          work);
    case rpc::DataMethod::kSample:
      return svc_.Run(
          kSampleNeighbors, kUcx, &bytes,
          [&]() -> Status {
            FANOUT_RETURN_IF_ERROR(svc_.CheckIds(r.ids));
            SampleParams p;
            p.fanout = r.call.fanout;
            p.replace = r.call.replace;
            p.weighted = r.call.weighted;
            p.with_edge_ids = r.call.with_edge_ids;
            p.seed = r.call.seed;
            p.hop = r.call.hop;
            p.labor = r.call.labor;
            p.walk = !r.call.walk_keys.empty();
            p.walk_keys = r.call.walk_keys;
            p.version = r.call.version;
            const sampler::OneHopResult* hop = nullptr;
            FANOUT_RETURN_IF_ERROR(svc_.Sample(r.ids, p, &hop));
            const size_t n = r.ids.size();
            char* out =
                reply->Reserve(rpc::SampleReplyBytes(n, hop->offsets[n], p.with_edge_ids, p.labor));
            rpc::EncodeSampleReply(hop->offsets.data(), n, hop->neighbors.data(),
                                   p.with_edge_ids ? hop->edge_ids.data() : nullptr, out,
                                   p.labor ? hop->edge_weights.data() : nullptr);
            bytes = reply->size();
            return Status::OK();
          },
          work);
    case rpc::DataMethod::kPing:
      reply->Reserve(0);
      return Status::OK();
  }
  return Status::InvalidArgument("unknown data-plane method " +
                                 std::to_string(static_cast<int>(r.method)));
}

}  // namespace fanout::server
