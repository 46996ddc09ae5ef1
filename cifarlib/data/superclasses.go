package data

import "sync"

// cifar100Superclasses lists, per CIFAR-100 coarse class (in label order), its five fine
// classes, as published with the dataset.
var cifar100Superclasses = [20][5]string{
	{"beaver", "dolphin", "otter", "seal", "whale"},                     // aquatic_mammals
	{"aquarium_fish", "flatfish", "ray", "shark", "trout"},              // fish
	{"orchid", "poppy", "rose", "sunflower", "tulip"},                   // flowers
	{"bottle", "bowl", "can", "cup", "plate"},                           // food_containers
	{"apple", "mushroom", "orange", "pear", "sweet_pepper"},             // fruit_and_vegetables
	{"clock", "keyboard", "lamp", "telephone", "television"},            // household_electrical_devices
	{"bed", "chair", "couch", "table", "wardrobe"},                      // household_furniture
	{"bee", "beetle", "butterfly", "caterpillar", "cockroach"},          // insects
	{"bear", "leopard", "lion", "tiger", "wolf"},                        // large_carnivores
	{"bridge", "castle", "house", "road", "skyscraper"},                 // large_man-made_outdoor_things
	{"cloud", "forest", "mountain", "plain", "sea"},                     // large_natural_outdoor_scenes
	{"camel", "cattle", "chimpanzee", "elephant", "kangaroo"},           // large_omnivores_and_herbivores
	{"fox", "porcupine", "possum", "raccoon", "skunk"},                  // medium_mammals
	{"crab", "lobster", "snail", "spider", "worm"},                      // non-insect_invertebrates
	{"baby", "boy", "girl", "man", "woman"},                             // people
	{"crocodile", "dinosaur", "lizard", "snake", "turtle"},              // reptiles
	{"hamster", "mouse", "rabbit", "shrew", "squirrel"},                 // small_mammals
	{"maple_tree", "oak_tree", "palm_tree", "pine_tree", "willow_tree"}, // trees
	{"bicycle", "bus", "motorcycle", "pickup_truck", "train"},           // vehicles_1
	{"lawn_mower", "rocket", "streetcar", "tank", "tractor"},            // vehicles_2
}

var (
	superclassOnce sync.Once
	// fineToCoarse[f] is the coarse label of fine label f; fineRank[f] is f's position (0..4) within its superclass.
	fineToCoarse, fineRank [100]int
)

func initSuperclasses() {
	superclassOnce.Do(func() {
		index := make(map[string]int, len(cifar100FineClasses))
		for i, name := range cifar100FineClasses {
			index[name] = i
		}
		for i := range fineToCoarse {
			fineToCoarse[i] = -1
		}
		for c, fines := range cifar100Superclasses {
			for k, name := range fines {
				f, ok := index[name]
				if !ok {
					panic("data: superclass table names unknown fine class " + name)
				}
				fineToCoarse[f], fineRank[f] = c, k
			}
		}
	})
}

// CIFAR100CoarseOf returns the coarse (superclass) label of a CIFAR-100 fine label, as in the
// official dataset (e.g. fine 4 "beaver" -> coarse 0 "aquatic_mammals"); -1 if fine is not in [0, 100).
func CIFAR100CoarseOf(fine int) int {
	if fine < 0 || fine >= len(fineToCoarse) {
		return -1
	}
	initSuperclasses()
	return fineToCoarse[fine]
}

// cifar100FinesOf returns the five fine labels of a CIFAR-100 coarse label, or nil if coarse
// is not in [0, 20).
func cifar100FinesOf(coarse int) []int {
	if coarse < 0 || coarse >= len(cifar100Superclasses) {
		return nil
	}
	initSuperclasses()
	fines := make([]int, 0, 5)
	for f, c := range fineToCoarse {
		if c == coarse {
			fines = append(fines, f)
		}
	}
	return fines
}
