// automatic with a user comparator on 48-byte records (automatic_comparator_check.cuh):
// CUB's merge sort or the randomized sample sort where its workspace is given, else the
// in-place bitonic sort, in both orders.
#include "automatic_comparator_check.cuh"

using namespace gpusort::testing;

using GpuApi = GpuTest;

TEST_F(GpuApi, AutomaticComparatorSortTakesMergeOrSampleSortWhereTheWorkspaceIsGiven48) {
  check_automatic_comparator_sizes<keyed_record<9>>(true);
}
