#pragma once
/// The stored responses of /v1/responses (`store`, `previous_response_id`, GET and
/// DELETE /v1/responses/{id}): a bounded map with a time to live, shared by every
/// connection (a mutex: the io threads call it).
///
/// A follow-up request continues a stored conversation: its input and output items come
/// before the new input. Each entry keeps only its own items and a link to the turn it
/// continued, so a chain of n turns holds each item once:
///
///   resp_3 ──> turn{items of 3} ──parent──> turn{items of 2} ──parent──> turn{items of 1}
///
/// A turn lives while an entry or a later turn links to it: evicting resp_2 from the map
/// leaves resp_3's conversation whole.

#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace inflight::gateway {

/// One turn of a conversation: the items it added (its input items, then its output
/// items), after those of `parent`.
struct conversation_turn {
  std::shared_ptr<const conversation_turn> parent;
  nlohmann::json items = nlohmann::json::array();
};

/// Every item of the conversation that ends with `turn`, oldest first.
nlohmann::json conversation_items(const std::shared_ptr<const conversation_turn>& turn);

class responses_store {
 public:
  using clock = std::chrono::steady_clock;
  using now_fn = std::function<clock::time_point()>;

  struct entry {
    nlohmann::json response;                          ///< the Response object as returned
    std::shared_ptr<const conversation_turn> turn;    ///< the conversation it ends
  };

  /// `max_entries` 0: nothing is stored. `ttl_s` 0: entries live until evicted.
  responses_store(std::size_t max_entries, double ttl_s, now_fn now = clock::now);

  /// Stores (or replaces) `id`; the oldest entry leaves when the store is full.
  void put(const std::string& id, entry e);
  /// The entry of `id`, unless absent, deleted, evicted or older than the TTL.
  std::optional<entry> find(const std::string& id);
  /// Removes `id`; false when it was not there (or had expired).
  bool erase(const std::string& id);
  std::size_t size();

 private:
  struct slot {
    entry value;
    clock::time_point stored_at;
    std::list<std::string>::iterator age;  ///< its place in order_
  };
  void drop_expired(clock::time_point now);
  bool is_expired(const slot& s, clock::time_point now) const;

  std::size_t max_entries_;
  clock::duration ttl_;
  now_fn now_;
  std::mutex mutex_;
  std::unordered_map<std::string, slot> slots_;
  std::list<std::string> order_;  ///< ids, oldest first
};

}  // namespace inflight::gateway
