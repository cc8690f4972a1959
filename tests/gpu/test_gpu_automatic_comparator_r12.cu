// automatic with a user comparator on 12-byte records (automatic_comparator_check.cuh):
// CUB's merge sort or the randomized sample sort where its workspace is given, else the
// in-place bitonic sort, in both orders.
#include "automatic_comparator_check.cuh"

using namespace gpusort::testing;

using GpuApi = GpuTest;

TEST_F(GpuApi, AutomaticComparatorSortTakesMergeOrSampleSortWhereTheWorkspaceIsGiven12) {
  check_automatic_comparator_sizes<keyed_record<0>>(false);
}
