// MovieLens CSVs (GroupLens' ml-latest / ml-latest-small layout) as a
// heterogeneous graph:
//   node types  user (the userIds of ratings.csv and tags.csv, ascending),
//               movie (movies.csv, in file order), genre (the genre names of
//               movies.csv, sorted; "(no genres listed)" is one of them)
//   edge types  (user, rates, movie)    one per ratings.csv line
//               (user, tags, movie)     one per tags.csv line (when present)
//               (movie, has_genre, genre)
//   features    movie: the genre multi-hot vector; user and genre: none
//   original ids userId, movieId, and the genre's index
// Ratings' values are not part of the graph: the rating regression example
// reads them from ratings.csv itself. With --edge-times (LoadOptions::
// edge_times) each rates and tags edge keeps its line's timestamp (Unix
// seconds) and has_genre edges, which have none, time 0 (there from the
// start: every temporal query sees them).
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include "datasets/formats.h"
#include "datasets/line_reader.h"
#include "datasets/progress.h"

namespace fanout::datasets {

Status SplitCsvLine(std::string_view line, std::vector<std::string>* fields) {
  fields->clear();
  std::string cur;
  bool quoted = false, was_quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          cur += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        cur += c;
      }
    } else if (c == '"' && cur.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (c == ',') {
      fields->push_back(std::move(cur));
      cur.clear();
      was_quoted = false;
    } else {
      cur += c;
    }
  }
  if (quoted) return Status::InvalidArgument("a quoted field is not closed");
  fields->push_back(std::move(cur));
  return Status::OK();
}

namespace {

bool FileExists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

// Calls fn(fields, where) for every data line of a CSV whose header starts
// with `header` (the first columns' names).
template <typename Fn>
Status ReadCsv(const std::string& path, const std::vector<std::string>& header, bool quiet,
               Fn&& fn) {
  std::unique_ptr<LineReader> r;
  FANOUT_RETURN_IF_ERROR(LineReader::Open(path, &r));
  Progress progress("reading " + path, " bytes", r->file_size(), quiet);
  std::string_view line;
  std::vector<std::string> f;
  bool first = true;
  int64_t rows = 0;
  while (r->Next(&line)) {
    if (first && line.size() >= 3 && line.substr(0, 3) == "\xEF\xBB\xBF")
      line.remove_prefix(3);  // UTF-8 BOM
    if (line.empty()) continue;
    Status st = SplitCsvLine(line, &f);
    if (!st.ok()) return Status::InvalidArgument(r->Where() + st.message());
    if (first) {
      first = false;
      for (size_t i = 0; i < header.size(); ++i)
        if (i >= f.size() || f[i] != header[i])
          return Status::InvalidArgument(r->Where() + "expected a header starting '" + header[0] +
                                         "," + (header.size() > 1 ? header[1] : "") +
                                         ",...', found '" + std::string(line.substr(0, 80)) + "'");
      continue;
    }
    if (f.size() < header.size())
      return Status::InvalidArgument(r->Where() + "expected " + std::to_string(header.size()) +
                                     " fields, found " + std::to_string(f.size()));
    FANOUT_RETURN_IF_ERROR(fn(f, r->Where()));
    if ((++rows & 0x3fff) == 0) progress.Update(r->bytes_read());
  }
  FANOUT_RETURN_IF_ERROR(r->status());
  if (first) return Status::InvalidArgument(path + ": empty file, expected a header line");
  progress.Update(r->file_size());
  progress.Done(std::to_string(rows) + " rows");
  return Status::OK();
}

Status ParseId(const std::string& text, const std::string& what, const std::string& where,
               int64_t* out) {
  if (!ParseInt64(text, out) || *out < 0)
    return Status::InvalidArgument(where + what + " '" + text.substr(0, 40) +
                                   "' is not a non-negative integer");
  return Status::OK();
}

}  // namespace

Status LoadMovieLens(const std::string& input, const LoadOptions& options, RawDataset* out,
                     std::vector<std::string>* notes) {
  std::string dir = input;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const size_t slash = dir.find_last_of('/');
  out->name = slash == std::string::npos ? dir : dir.substr(slash + 1);
  out->format = "movielens";
  const std::string movies_csv = dir + "/movies.csv", ratings_csv = dir + "/ratings.csv",
                    tags_csv = dir + "/tags.csv";
  if (!FileExists(movies_csv) || !FileExists(ratings_csv))
    return Status::NotFound(dir + ": expected a MovieLens folder with movies.csv and ratings.csv");

  // Movies, in file order, and their genres.
  std::vector<int64_t> movie_ids;
  std::vector<std::vector<std::string>> movie_genres;
  std::unordered_map<int64_t, int64_t> movie_index;
  FANOUT_RETURN_IF_ERROR(
      ReadCsv(movies_csv, {"movieId", "title", "genres"}, options.quiet,
              [&](const std::vector<std::string>& f, const std::string& where) -> Status {
                int64_t id;
                FANOUT_RETURN_IF_ERROR(ParseId(f[0], "movieId", where, &id));
                if (!movie_index.emplace(id, static_cast<int64_t>(movie_ids.size())).second)
                  return Status::InvalidArgument(where + "movieId " + f[0] + " is listed twice");
                movie_ids.push_back(id);
                std::vector<std::string> genres;
                std::vector<std::string_view> parts;
                SplitFields(f[2], "|", false, &parts);
                for (std::string_view g : parts)
                  if (!g.empty()) genres.emplace_back(g);
                movie_genres.push_back(std::move(genres));
                return Status::OK();
              }));
  std::map<std::string, int64_t> genre_index;
  for (const auto& gs : movie_genres)
    for (const std::string& g : gs) genre_index.emplace(g, 0);
  int64_t next = 0;
  for (auto& [name, index] : genre_index) index = next++;

  // Ratings and tags: (user, movie) pairs; users are numbered after reading.
  std::vector<int64_t> rate_user, rate_movie, rate_time, tag_user, tag_movie, tag_time;
  const bool times = options.edge_times;
  auto read_pairs = [&](const std::string& path, std::vector<std::string> header,
                        std::vector<int64_t>* users, std::vector<int64_t>* movies,
                        std::vector<int64_t>* stamps) {
    if (times) header.push_back("timestamp");
    return ReadCsv(
        path, header, options.quiet,
        [&](const std::vector<std::string>& f, const std::string& where) -> Status {
          int64_t u, m, t = 0;
          FANOUT_RETURN_IF_ERROR(ParseId(f[0], "userId", where, &u));
          FANOUT_RETURN_IF_ERROR(ParseId(f[1], "movieId", where, &m));
          if (times && !ParseInt64(f[3], &t))
            return Status::InvalidArgument(where + "timestamp '" + f[3].substr(0, 40) +
                                           "' is not an integer");
          auto it = movie_index.find(m);
          if (it == movie_index.end())
            return Status::InvalidArgument(where + "movieId " + f[1] + " is not in " + movies_csv);
          users->push_back(u);
          movies->push_back(it->second);
          if (times) stamps->push_back(t);
          return Status::OK();
        });
  };
  FANOUT_RETURN_IF_ERROR(read_pairs(ratings_csv, {"userId", "movieId", "rating"}, &rate_user,
                                    &rate_movie, &rate_time));
  const bool tags = FileExists(tags_csv);
  if (tags)
    FANOUT_RETURN_IF_ERROR(
        read_pairs(tags_csv, {"userId", "movieId", "tag"}, &tag_user, &tag_movie, &tag_time));
  else
    notes->push_back(dir + ": no tags.csv; no (user, tags, movie) edges");
  std::vector<int64_t> user_ids(rate_user);
  user_ids.insert(user_ids.end(), tag_user.begin(), tag_user.end());
  std::sort(user_ids.begin(), user_ids.end());
  user_ids.erase(std::unique(user_ids.begin(), user_ids.end()), user_ids.end());

  // Global ids: users, then movies, then genres.
  const int64_t U = static_cast<int64_t>(user_ids.size()),
                M = static_cast<int64_t>(movie_ids.size()),
                G = static_cast<int64_t>(genre_index.size());
  const int64_t movie_base = U, genre_base = U + M;
  out->num_nodes = U + M + G;
  out->node_types = {"user", "movie", "genre"};
  out->node_type.resize(out->num_nodes);
  out->original_ids.resize(out->num_nodes);
  for (int64_t i = 0; i < U; ++i) out->node_type[i] = 0, out->original_ids[i] = user_ids[i];
  for (int64_t i = 0; i < M; ++i)
    out->node_type[movie_base + i] = 1, out->original_ids[movie_base + i] = movie_ids[i];
  for (int64_t i = 0; i < G; ++i)
    out->node_type[genre_base + i] = 2, out->original_ids[genre_base + i] = i;
  auto user_of = [&](int64_t id) {
    return static_cast<int64_t>(std::lower_bound(user_ids.begin(), user_ids.end(), id) -
                                user_ids.begin());
  };
  out->edge_types.push_back({0, "rates", 1});
  for (size_t i = 0; i < rate_user.size(); ++i) {
    out->src.push_back(user_of(rate_user[i]));
    out->dst.push_back(movie_base + rate_movie[i]);
    out->edge_type.push_back(0);
    if (times) out->edge_times.push_back(rate_time[i]);
  }
  if (tags) {
    const int32_t e = static_cast<int32_t>(out->edge_types.size());
    out->edge_types.push_back({0, "tags", 1});
    for (size_t i = 0; i < tag_user.size(); ++i) {
      out->src.push_back(user_of(tag_user[i]));
      out->dst.push_back(movie_base + tag_movie[i]);
      out->edge_type.push_back(e);
      if (times) out->edge_times.push_back(tag_time[i]);
    }
  }
  const int32_t has_genre = static_cast<int32_t>(out->edge_types.size());
  out->edge_types.push_back({1, "has_genre", 2});
  out->feature_dim = G;
  out->features.assign(static_cast<size_t>(out->num_nodes * G), 0.0f);
  for (int64_t m = 0; m < M; ++m) {
    for (const std::string& g : movie_genres[m]) {
      const int64_t gi = genre_index[g];
      out->src.push_back(movie_base + m);
      out->dst.push_back(genre_base + gi);
      out->edge_type.push_back(has_genre);
      if (times) out->edge_times.push_back(0);
      out->features[(movie_base + m) * G + gi] = 1.0f;
    }
  }
  out->type_feature_dims = {0, G, 0};
  return Status::OK();
}

}  // namespace fanout::datasets
